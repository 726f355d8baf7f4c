"""The Redis history sample against a real redis-server: the host leaves a user-owned history store alone.

The sample's agent keeps its transcript in Redis under the stable core session id `{agent}.{conversationId}`;
the host must pass that id on every turn (also after a restart), keep no transcript of its own, and report the
conversation's history as external.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import redis
from agent_framework import Agent, Message
from hosting import RunningHost

from agent_host import OfflineChatClient

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = ROOT / "samples" / "redis_history"
BASE = "/api/agents/{agent}/conversations/{conversation}"
MODEL_SETTINGS = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
_fresh_imports = itertools.count()


def _redis_server_binary() -> str | None:
    """redis-server's path, installing Debian's package first when it is missing and we may."""
    found = shutil.which("redis-server")
    if found or not shutil.which("apt-get") or os.geteuid() != 0:
        return found
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": False}
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], env=env, timeout=300, **quiet)
    subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], env=env, timeout=300, **quiet)
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port, its data in a temporary folder; stopped at the end."""
    binary = _redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed and could not be installed (apt-get install -y redis-server)")
    data_dir = tmp_path_factory.mktemp("redis")
    port = _free_port()
    process = subprocess.Popen(
        [
            binary,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--dir",
            str(data_dir),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        with redis.Redis.from_url(url) as client:
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server did not start on port {port}") from None
                    time.sleep(0.02)
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def store(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[redis.Redis]:
    """A client of the test's Redis, emptied first; the sample reads REDIS_URL and uses the offline model."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    for name in MODEL_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        client.flushdb()
        yield client


def import_sample() -> ModuleType:
    """The sample's function_app, imported afresh (a new app object each time, as after a cold start)."""
    sys.path.insert(0, str(SAMPLE_DIR))
    try:
        sys.modules.pop("redis_history_provider", None)
        spec = importlib.util.spec_from_file_location(
            f"redis_history_sample_{next(_fresh_imports)}", SAMPLE_DIR / "function_app.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SAMPLE_DIR))


def sample_app() -> Any:
    return import_sample().app


def sample_app_with_second_agent() -> Any:
    """The sample app plus a second agent, same Redis and same provider class, under another name."""
    module = import_sample()
    helper = Agent(
        OfflineChatClient(),
        instructions="You are a second assistant.",
        name="helper",
        context_providers=[module.RedisHistoryProvider(os.environ["REDIS_URL"])],
    )
    module.app.add_agent(helper)
    return module.app


def say(running: RunningHost, conversation: str, message: str, agent: str = "assistant") -> dict[str, Any]:
    reply = running.request(
        "POST", BASE.format(agent=agent, conversation=conversation) + "/turns", {"message": message}
    )
    assert reply.status == 200, reply.body
    return reply.json()


def stored(store: redis.Redis, key: str) -> list[dict[str, Any]]:
    return [json.loads(item) for item in store.lrange(key, 0, -1)]


def texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], "".join(c.get("text", "") for c in m["contents"])) for m in messages]


def test_redis_keeps_the_whole_conversation_and_the_host_keeps_no_transcript(
    store: redis.Redis, tmp_path: Path
) -> None:
    conversation = f"c-{uuid.uuid4().hex[:8]}"
    running = RunningHost(sample_app, tmp_path)
    try:
        first = say(running, conversation, "My name is Ada.")
        second = say(running, conversation, "My favourite colour is teal.")
        running.restart()  # a new app object and a new provider: only Redis remembers
        third = say(running, conversation, "What is my name?")
        fourth = say(running, conversation, "What is my favourite colour?")
        summary = running.request("GET", BASE.format(agent="assistant", conversation=conversation))
        assert running.host is not None
        raw_state = running.host.store.read_state("conversation_assistant", conversation)
    finally:
        running.stop()

    assert third["text"] == "[offline model] Your name is Ada."
    assert fourth["text"] == "[offline model] Your favourite colour is teal."

    key = f"assistant.{conversation}"
    assert store.keys("*") == [key]
    messages = stored(store, key)
    assert texts(messages) == [
        ("user", "My name is Ada."),
        ("assistant", "[offline model] Noted: your name is Ada. (0 earlier messages in this conversation.)"),
        ("user", "My favourite colour is teal."),
        (
            "assistant",
            "[offline model] Noted: your favourite colour is teal. (2 earlier messages in this conversation.)",
        ),
        ("user", "What is my name?"),
        ("assistant", "[offline model] Your name is Ada."),
        ("user", "What is my favourite colour?"),
        ("assistant", "[offline model] Your favourite colour is teal."),
    ]
    # Stored with Message.to_dict(): the host's stable input ids survive the round trip.
    turn_ids = [reply["turnId"] for reply in (first, second, third, fourth)]
    assert [m["message_id"] for m in messages if m["role"] == "user"] == [f"{turn}.in" for turn in turn_ids]

    assert raw_state is not None
    state = json.loads(raw_state)
    assert state.get("messages", []) == []
    # The provider keeps nothing in the session either: no user message is anywhere in the entity state.
    assert state.get("session", {}).get("state", {}).get("redis_history", {}) == {}
    assert [text for role, text in texts(messages) if role == "user" and text in raw_state] == []

    assert summary.status == 200
    body = summary.json()
    assert (body["history"], body["messageCount"], body["turnCount"]) == ("external", 0, 4)


def test_two_agents_with_one_conversation_id_use_separate_keys(store: redis.Redis, tmp_path: Path) -> None:
    conversation = "shared-id"
    running = RunningHost(sample_app_with_second_agent, tmp_path)
    try:
        say(running, conversation, "My name is Ada.", agent="assistant")
        say(running, conversation, "My name is Grace.", agent="helper")
        running.restart()
        assistant_answer = say(running, conversation, "What is my name?", agent="assistant")
        helper_answer = say(running, conversation, "What is my name?", agent="helper")
    finally:
        running.stop()

    assert assistant_answer["text"] == "[offline model] Your name is Ada."
    assert helper_answer["text"] == "[offline model] Your name is Grace."
    assert sorted(store.keys("*")) == [f"assistant.{conversation}", f"helper.{conversation}"]
    assert [text for role, text in texts(stored(store, f"helper.{conversation}")) if role == "user"] == [
        "My name is Grace.",
        "What is my name?",
    ]
    assert [text for role, text in texts(stored(store, f"assistant.{conversation}")) if role == "user"] == [
        "My name is Ada.",
        "What is my name?",
    ]


def test_provider_round_trips_message_ids_and_annotations(store: redis.Redis) -> None:
    provider = import_sample().RedisHistoryProvider(os.environ["REDIS_URL"], key_prefix="tenant-a:")
    annotated = Message(
        "assistant",
        ["an old answer"],
        message_id="t1.0",
        additional_properties={"_excluded": True, "_group": {"id": "g1", "kind": "assistant_text"}},
    )

    async def save_then_load() -> list[Message]:
        await provider.save_messages("assistant.c1", [Message("user", ["hi"], message_id="t1.in"), annotated])
        await provider.save_messages("assistant.c1", [Message("user", ["again"], message_id="t2.in")])
        return await provider.get_messages("assistant.c1")

    loaded = asyncio.run(save_then_load())

    assert store.keys("*") == ["tenant-a:assistant.c1"]
    assert [(m.message_id, m.role, m.text) for m in loaded] == [
        ("t1.in", "user", "hi"),
        ("t1.0", "assistant", "an old answer"),
        ("t2.in", "user", "again"),
    ]
    assert loaded[1].additional_properties == {"_excluded": True, "_group": {"id": "g1", "kind": "assistant_text"}}
    with pytest.raises(ValueError, match="needs a session id"):
        asyncio.run(provider.get_messages(None))
