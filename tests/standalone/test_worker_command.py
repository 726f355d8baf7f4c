"""`python -m agent_host worker`: the real command in a process of its own, hosting an app module's agent on the
in-memory backend this test process runs, serving its HTTP API (streamed turns through the store its settings name);
and its startup mistakes, one line each."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from hosting import command_environment, free_port, only_stderr_line, request_at, run_command, start_command
from principals import ADMIN_KEY, ALICE, BOB
from streams import parse_sse

from agent_host import ConversationNotFoundError, UnauthenticatedError
from agent_host._streaming.channel import stream_key
from agent_host._streaming.selection import STREAM_STORE_SETTING
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host.worker import ADMIN_KEY_HEADER, API_KEY_SETTING

ROOT = Path(__file__).resolve().parents[2]
MCP_PATH = "/runtime/webhooks/mcp"
BASE = "/api/agents/assistant/conversations"
KEY = "cli-key"
APP = """
from agent_framework import Agent

from agent_host import OfflineChatClient

agent = Agent(OfflineChatClient(), "You are a helpful assistant.", name="assistant")
not_an_agent = 42
"""


def environment(**settings: str) -> dict[str, str]:
    return command_environment(ROOT, **settings)


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "worker_app.py").write_text(APP, encoding="utf-8")
    return tmp_path


def stop_command(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Stop the command with SIGTERM, as Kubernetes and Container Apps stop it: its exit code and all it printed."""
    process.send_signal(signal.SIGTERM)
    exit_code = process.wait(60)
    assert process.stdout is not None
    output = process.stdout.read()
    process.stdout.close()
    return exit_code, output


def run_until_exit(app_dir: Path, *arguments: str, **settings: str) -> subprocess.CompletedProcess[str]:
    return run_command(app_dir, ["worker", *arguments], environment(**settings))


def test_the_command_serves_two_turns_with_recall_and_stops_cleanly_on_sigterm(hub: str, app_dir: Path) -> None:
    port = free_port()
    arguments = ["worker", "--app", "worker_app:agent", "--port", str(port), "--sidecar", hub]
    streams = app_dir / "streams.sqlite3"
    settings = {API_KEY_SETTING: KEY, STREAM_STORE_SETTING: f"sqlite:{streams}"}
    process = start_command(app_dir, arguments, environment(**settings))
    base_url = f"http://127.0.0.1:{port}"
    key = {"Authorization": f"Bearer {KEY}"}
    try:
        first = request_at(base_url, "POST", f"{BASE}/c1/turns", {"message": "My name is Ada."}, headers=key)
        second = request_at(base_url, "POST", f"{BASE}/c1/turns", {"message": "What is my name?"}, headers=key)
        streamed = request_at(
            base_url, "POST", f"{BASE}/c1/turns", {"message": "Hi."}, headers={**key, "Accept": "text/event-stream"}
        )
        refused = request_at(base_url, "GET", f"{BASE}/c1")
    finally:
        exit_code, output = stop_command(process)
    turn_id = streamed.headers["location"].rsplit("/", 1)[1]
    store = SqliteStreamStore(streams)
    written = asyncio.run(store.read(stream_key("conversation_assistant", "c1", turn_id)))
    store.close()

    assert first.status == second.status == 200
    assert second.json()["text"] == "[offline model] Your name is Ada."
    # The streamed turn's events are the ones the worker wrote to the store its settings name, then the last one.
    events = parse_sse(streamed.body)
    assert [(e.id, e.event, e.data) for e in events[:-1]] == [(e.id, e.event, e.data) for e in written]
    assert [e.event for e in written][:2] == ["turn.started", "message.delta"]
    assert events[-1].event == "turn.completed"
    assert refused.status == 401 and refused.json()["error"]["code"] == "unauthenticated"
    assert exit_code == 0, output
    assert "Traceback" not in output
    assert "Stopping: the worker finishes the operations it holds." in output


def test_with_conversation_owners_the_command_serves_each_principal_its_own(hub: str, app_dir: Path) -> None:
    port = free_port()
    arguments = ["worker", "--app", "worker_app:agent", "--port", str(port), "--sidecar", hub, "--no-auth"]
    process = start_command(app_dir, [*arguments, "--conversation-owners"], environment(AGENT_HOST_ADMIN_KEY=ADMIN_KEY))
    base_url = f"http://127.0.0.1:{port}"
    try:
        turn = request_at(base_url, "POST", f"{BASE}/c1/turns", {"message": "My name is Ada."}, headers=ALICE)
        other = request_at(base_url, "GET", f"{BASE}/c1", headers=BOB)
        nobody = request_at(base_url, "GET", f"{BASE}/c1")
        admin = request_at(base_url, "GET", f"{BASE}/c1", headers={ADMIN_KEY_HEADER: ADMIN_KEY})
    finally:
        exit_code, output = stop_command(process)

    assert turn.status == 200, turn.body
    assert other.status == 404 and other.json() == ConversationNotFoundError("assistant", "c1").body()
    assert nobody.status == 401 and nobody.json() == UnauthenticatedError().body()
    assert admin.status == 200 and admin.json()["turnCount"] == 1
    assert exit_code == 0, output


def test_with_mcp_the_command_serves_the_agents_tool_behind_the_key_and_names_it(hub: str, app_dir: Path) -> None:
    port = free_port()
    arguments = ["worker", "--app", "worker_app:agent", "--port", str(port), "--sidecar", hub, "--mcp"]
    process = start_command(app_dir, arguments, environment(**{API_KEY_SETTING: KEY}))
    base_url = f"http://127.0.0.1:{port}"
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "assistant", "arguments": {"query": "My name is Ada.", "sessionId": "m1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        answered = request_at(base_url, "POST", MCP_PATH, call, headers={**headers, "Authorization": f"Bearer {KEY}"})
        refused = request_at(base_url, "POST", MCP_PATH, call, headers=headers)
    finally:
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(60)
    assert process.stdout is not None
    output = process.stdout.read()
    process.stdout.close()

    (event,) = parse_sse(answered.body)
    assert event.data["result"]["structuredContent"]["sessionId"] == "m1"
    assert event.data["result"]["content"][0]["text"].startswith("[offline model] Noted")
    assert refused.status == 401 and refused.json()["error"]["code"] == "unauthenticated"
    assert f"MCP tools (Streamable HTTP) at http://127.0.0.1:{port}/runtime/webhooks/mcp: assistant" in output
    assert exit_code == 0, output


def test_without_the_api_key_setting_the_command_says_how_to_set_it(app_dir: Path) -> None:
    result = run_until_exit(app_dir, "--app", "worker_app:agent", "--port", str(free_port()))

    assert only_stderr_line(result) == (
        "agent_host worker: The HTTP API needs a key and AGENT_HOST_API_KEY is not set. Set it to a secret (clients "
        "send it as Authorization: Bearer <key>), give asgi_app(auth=...) a hook of your own, or pass auth=None to "
        "serve without authentication (only behind a gateway that authenticates, or on loopback). From the command "
        "line: --no-auth."
    )


def test_a_module_not_found_is_one_line(app_dir: Path) -> None:
    result = run_until_exit(app_dir, "--app", "missing_app:agent", "--no-auth")

    assert only_stderr_line(result).startswith(
        f"agent_host worker: --app missing_app:agent: there is no module 'missing_app' in the working directory "
        f"({app_dir}) or on PYTHONPATH"
    )
    assert only_stderr_line(result).endswith("Run worker from the app's folder, or name the module with --app.")


def test_an_attribute_that_is_no_agent_is_one_line(hub: str, app_dir: Path) -> None:
    result = run_until_exit(app_dir, "--app", "worker_app:not_an_agent", "--no-auth", "--sidecar", hub)

    assert only_stderr_line(result) == (
        "agent_host worker: --app names a int; name an agent, a list of agents, or a function that takes the "
        "AgentWorker and registers agents on it (hosted.add_agent(agent, ...))."
    )


def test_a_port_in_use_is_one_line(app_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_until_exit(app_dir, "--app", "worker_app:agent", "--no-auth", "--port", str(port))

    assert only_stderr_line(result) == (
        f"agent_host worker: port {port} on 127.0.0.1 is already in use (another serve, or func start?). Stop that "
        "process, or choose another port with --port."
    )


def test_an_unreachable_sidecar_is_one_line(app_dir: Path) -> None:
    sidecar = f"localhost:{free_port()}"
    result = run_until_exit(app_dir, "--app", "worker_app:agent", "--no-auth", "--sidecar", sidecar)

    assert only_stderr_line(result) == (
        f"agent_host worker: cannot reach the durabletask sidecar at {sidecar} (UNAVAILABLE). Start it, or name it "
        "with --sidecar (or --scheduler and --taskhub)."
    )


def test_a_stream_store_setting_that_names_no_store_is_one_line(app_dir: Path) -> None:
    result = run_until_exit(app_dir, "--app", "worker_app:agent", "--no-auth", **{STREAM_STORE_SETTING: "sqlite:"})

    assert only_stderr_line(result) == (
        "agent_host worker: AGENT_HOST_STREAM_STORE=sqlite: needs a file path, e.g. "
        "'sqlite:.agent_host/streams.sqlite3'."
    )
