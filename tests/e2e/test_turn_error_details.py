"""A failed turn tells the developer why (AGENT_HOST_TURN_ERROR_DETAILS, on under serve), and never a secret.

The model client is the real OpenAI one, pointed at what a developer meets: a port nothing listens on, a server that
refuses the key (echoing it, as some servers do) and one too slow to answer. Only the server is fake.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import hosting
import pytest
from agent_framework import Agent, Message
from agent_framework_openai import OpenAIChatCompletionClient
from apps import build_app
from chat_clients import ScriptedChatClient
from hosting import RunningHost
from openai import AsyncOpenAI

from agent_host import HostSettings

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-live-Secret0123456789abcdef"
CONNECTION = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=U2VjcmV0U3RvcmFnZUtleQ==;Suffix=x"
TURN = "/api/agents/assistant/conversations/c1/turns"


class FakeModelServer(BaseHTTPRequestHandler):
    """`/slow/...` answers after two seconds; anything else refuses the key, echoing it and the Authorization header."""

    def do_POST(self) -> None:
        if self.path.startswith("/slow/"):
            time.sleep(2)
        echoed = f"Incorrect API key provided: {KEY}. You sent Authorization: {self.headers.get('Authorization')}"
        body = json.dumps({"error": {"message": echoed, "type": "invalid_request_error"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModelServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def openai_agent(base_url: str, timeout: float = 10) -> Agent:
    client = AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0, timeout=timeout)
    return Agent(OpenAIChatCompletionClient(model="gpt-4o-mini", async_client=client), "Be brief.", name="assistant")


def failed_turn(tmp_path: Path, agent: Agent, *, details: bool = True) -> dict[str, str]:
    running = RunningHost(lambda: build_app(agent, settings=HostSettings(turn_error_details=details)), tmp_path)
    try:
        reply = running.request("POST", TURN, {"message": "hello"})
        stored = running.request("GET", f"{TURN}/{reply.json()['turnId']}")
    finally:
        running.stop()
    assert reply.status == 502
    assert stored.json()["error"] == reply.json()["error"]  # the turn record keeps the same words
    assert KEY not in reply.body.decode() and KEY not in stored.body.decode()
    return reply.json()["error"]


AFTER = " The conversation's earlier history is unchanged; send the next turn to continue."


def test_a_model_server_nobody_listens_on(tmp_path: Path) -> None:
    error = failed_turn(tmp_path, openai_agent(f"http://127.0.0.1:{closed_port()}/v1"))

    assert error["code"] == "turn_failed"
    assert error["message"] == (
        "The agent run failed: the model server could not be reached (ConnectError: All connection attempts "
        f"failed).{AFTER}"
    )


def test_a_model_server_that_refuses_the_key_and_echoes_it(tmp_path: Path, model_server: str) -> None:
    error = failed_turn(tmp_path, openai_agent(f"{model_server}/v1"))

    assert error["message"].startswith("The agent run failed: the model server refused the credentials (HTTP 401) ")
    assert "Incorrect API key provided: [redacted]" in error["message"]
    assert "Bearer" not in error["message"]


def test_a_model_server_too_slow_to_answer(tmp_path: Path, model_server: str) -> None:
    error = failed_turn(tmp_path, openai_agent(f"{model_server}/slow/v1", timeout=0.5))

    assert error["message"] == (f"The agent run failed: the model server did not answer in time (ReadTimeout).{AFTER}")


def test_a_client_whose_exception_holds_the_apps_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AzureWebJobsStorage", CONNECTION)

    def leak(messages: list[Message], options: Any) -> Message:
        raise RuntimeError(
            f"could not call the model with {KEY} (storage {CONNECTION}), header Bearer abc.def.ghi12345"
        )

    error = failed_turn(tmp_path, Agent(ScriptedChatClient(leak), "x", name="assistant"))

    assert error["message"] == (
        "The agent run failed: the agent run raised (RuntimeError: could not call the model with [redacted] (storage "
        f"[redacted]), header Bearer [redacted]).{AFTER}"
    )


def test_with_details_off_a_failed_turn_names_the_exception_type_only(tmp_path: Path, model_server: str) -> None:
    error = failed_turn(tmp_path, openai_agent(f"{model_server}/v1"), details=False)

    assert error["message"] == f"The agent run failed (ChatClientException).{AFTER}"


def test_serve_turns_the_details_on(tmp_path: Path) -> None:
    port = closed_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_"))}
    env.update(
        PYTHONPATH=hosting.child_pythonpath(ROOT),
        OPENAI_BASE_URL=f"http://127.0.0.1:{closed_port()}/v1",
        OPENAI_API_KEY=KEY,
        OPENAI_CHAT_MODEL="gpt-4o-mini",
    )
    process = hosting.start_serve(ROOT, port, tmp_path, env)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{TURN}", b'{"message": "hello"}', {"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        body = json.loads(refused.value.read())
    finally:
        hosting.stop_serve(process)

    assert refused.value.code == 502
    assert body["error"]["message"].startswith("The agent run failed: the model server could not be reached (")
    assert KEY not in json.dumps(body)
