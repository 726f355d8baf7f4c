"""The stream store an app's settings choose belongs to the app: stopping the local host closes it.

Its network client (the Azure SDK's aiohttp session) would otherwise outlive the app unclosed, and warn whenever the
garbage collector reached it: under `filterwarnings = error` that failed whichever test ran then, or the session.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import aiohttp
import pytest
from apps import build_app, make_agent
from hosting import RunningHost

from agent_host import OfflineChatClient
from agent_host._streaming.channel import stream_key
from agent_host._streaming.sqlite_store import SqliteStreamStore

BASE = "/api/agents/assistant/conversations/c1"


def open_sessions() -> set[int]:
    return {id(item) for item in gc.get_objects() if isinstance(item, aiohttp.ClientSession) and not item.closed}


def test_stopping_the_local_host_closes_the_stream_store_its_settings_chose(
    azurite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AzureWebJobsStorage", azurite)
    monkeypatch.delenv("AGENT_HOST_STREAM_STORE", raising=False)
    before = open_sessions()
    app = build_app(make_agent(OfflineChatClient()))
    running = RunningHost(lambda: app, tmp_path)
    try:
        started = running.request(
            "POST", f"{BASE}/turns", {"message": "My name is Ada.", "wait": False, "stream": True}
        )
        turn = started.json()["turnId"]
        streamed = running.request("GET", f"{BASE}/turns/{turn}/stream")
        opened = open_sessions() - before
    finally:
        running.stop()

    assert (started.status, streamed.status) == (202, 200)
    assert b"event: turn.completed" in streamed.body and b"Ada" in streamed.body
    assert opened, "the Azure Table store never opened its client: the test proved nothing"
    assert open_sessions() & opened == set()


def test_a_store_given_to_the_app_stays_open_for_whoever_gave_it(tmp_path: Path) -> None:
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    app = build_app(make_agent(OfflineChatClient()), stream_store=store)
    running = RunningHost(lambda: app, tmp_path / "state")
    try:
        reply = running.request("POST", f"{BASE}/turns", {"message": "My name is Ada.", "stream": True})
    finally:
        running.stop()

    events = asyncio.run(store.read(stream_key("conversation_assistant", "c1", reply.json()["turnId"])))
    store.close()
    assert reply.status == 200
    assert [event.event for event in events][:2] == ["turn.started", "message.delta"], "the given store was closed"
