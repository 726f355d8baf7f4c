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
from worker_hosting import HttpHost, RunningWorkerHost, Serve, TaskHub

from agent_host import HostSettings
from agent_host._owners import OwnerHook
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
    its turn streams in a SQLite file, as the local host does by default. The hosts one test starts share their
    storage: the function app's state directory, or the worker's backend.

    `serve(make_agent, settings=None, *, conversation_owners=False)`: `conversation_owners` is the app's option
    (`AgentFunctionApp(conversation_owners=...)`, `asgi_app(conversation_owners=...)`)."""
    started: list[HttpHost] = []
    worker_streams = SqliteStreamStore(tmp_path / "worker-streams.sqlite3")
    functions_streams = SqliteStreamStore(tmp_path / "functions-streams.sqlite3")
    task_hubs: list[TaskHub] = []

    def start(
        make_agent: Callable[[], Any],
        settings: HostSettings | None = None,
        *,
        conversation_owners: bool | OwnerHook = False,
    ) -> HttpHost:
        def agents() -> list[Any]:  # `make_agent` may make one agent or a list of them
            made = make_agent()
            return made if isinstance(made, list) else [made]

        host: HttpHost
        if request.param == "functions":
            host = RunningHost(
                lambda: build_app(
                    *agents(),
                    settings=settings,
                    conversation_owners=conversation_owners,
                    stream_store=functions_streams,
                ),
                tmp_path,
            )
        else:
            if not task_hubs:
                task_hubs.append(TaskHub.start())
            host = RunningWorkerHost(
                agents,
                settings=settings,
                stream_store=worker_streams,
                conversation_owners=conversation_owners,
                task_hub=task_hubs[0],
            )
        started.append(host)
        return host

    yield start
    for host in started:
        host.stop()
    for hub in task_hubs:
        hub.backend.stop()
    worker_streams.close()
    functions_streams.close()
