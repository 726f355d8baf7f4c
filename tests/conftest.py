"""Shared fixtures: a scripted chat client, and the local host serving one agent on it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost
from worker_hosting import HttpHost, RunningWorkerHost, Serve

from agent_host import HostSettings
from agent_host._streaming.sqlite_store import SqliteStreamStore

# The template's local.settings.json sets it, and HTTP-streams apps need it (the local host refuses them without it):
# the tests' apps run with the app settings the template gives.
os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")


@pytest.fixture
def scripted() -> ScriptedChatClient:
    return ScriptedChatClient()


@pytest.fixture
def scripted_host(tmp_path: Path) -> Iterator[tuple[RunningHost, ScriptedChatClient]]:
    """The local host serving one agent on a scripted client, and that client; stopped afterwards."""
    client = ScriptedChatClient()
    running = RunningHost(lambda: build_app(make_agent(client)), tmp_path)
    yield running, client
    running.stop()


@pytest.fixture(params=["functions", "worker"])
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Serve]:
    """Serve the agent (or list of agents) `make_agent()` makes (again on each restart) on one of the two hosts of the
    HTTP API: the function app on the local host, or the standalone worker's ASGI app on durabletask's in-memory
    backend. A test that takes it runs once on each, with the same assertions (docs/standalone-worker.md). Each keeps
    its turn streams in a SQLite file, as the local host does by default."""
    started: list[HttpHost] = []
    worker_streams = SqliteStreamStore(tmp_path / "worker-streams.sqlite3")

    def start(make_agent: Callable[[], Any], settings: HostSettings | None = None) -> HttpHost:
        def agents() -> list[Any]:  # `make_agent` may make one agent or a list of them
            made = make_agent()
            return made if isinstance(made, list) else [made]

        host: HttpHost
        if request.param == "functions":
            host = RunningHost(lambda: build_app(*agents(), settings=settings), tmp_path)
        else:
            host = RunningWorkerHost(agents, settings=settings, stream_store=worker_streams)
        started.append(host)
        return host

    yield start
    for host in started:
        host.stop()
    worker_streams.close()
