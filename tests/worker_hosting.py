"""The standalone worker as the tests run it: its HTTP API (an `AgentWorker` and its ASGI app, uvicorn in a thread)
on a durabletask in-memory backend of its own, restartable, with the same `request` as `hosting.RunningHost`; and
the worker as `bench.retention_budget`'s host of a replay's turns."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import uvicorn
from agent_framework import Agent, SupportsAgentRun
from durabletask.client import TaskHubGrpcClient
from durabletask.entities import EntityInstanceId
from durabletask.testing import create_test_backend
from durabletask.worker import TaskHubGrpcWorker
from hosting import Reply, RunningHost, free_port, request_at

from agent_host import HostSettings, TurnStreamStore
from agent_host._clock import Clock
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host.worker import AgentClient, AgentWorker, AuthHook, asgi_app, worker_options
from bench.retention_budget import ENTITY, CommitTurn

STARTUP_SECONDS = 30.0
TURN_SECONDS = 60.0


class RunningWorkerHost:
    """A worker hosting the agents `agents_factory` makes, and its HTTP API on 127.0.0.1; `restart()` starts a new
    worker and server (with new agents) on the same backend, as a restarted process would.

    Args:
        agents_factory: Makes the agents each start hosts.
        settings: The worker's settings (`HostSettings()`, the defaults, when omitted).
        auth: The ASGI app's `auth` (None: every request is served).
        stream_store: The worker's turn stream store (the ASGI app reads the worker's).
    """

    def __init__(
        self,
        agents_factory: Callable[[], Sequence[SupportsAgentRun]],
        *,
        settings: HostSettings | None = None,
        auth: AuthHook | None = None,
        stream_store: TurnStreamStore | None = None,
    ) -> None:
        self.agents_factory = agents_factory
        self.settings = settings or HostSettings()
        self.auth = auth
        self.stream_store = stream_store
        port = free_port()
        self.backend = create_test_backend(port=port)
        self.address = f"localhost:{port}"
        self.base_url = ""
        self._worker: TaskHubGrpcWorker | None = None
        self._client: TaskHubGrpcClient | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.start()

    def start(self) -> None:
        CONVERSATION_CACHE.clear()  # a fresh process has none
        self._worker = TaskHubGrpcWorker(host_address=self.address, **worker_options())
        hosted = AgentWorker(
            self._worker, self.agents_factory(), settings=self.settings, stream_store=self.stream_store
        )
        self._worker.start()
        self._client = TaskHubGrpcClient(host_address=self.address)
        app = asgi_app(self._client, hosted, auth=self.auth)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        server = self._server
        self._thread = threading.Thread(target=lambda: server.run(sockets=[listener]), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            assert self._thread.is_alive(), "uvicorn stopped while starting"
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop the server and the worker, then the backend."""
        self._stop_process()
        self.backend.stop()

    def restart(self) -> None:
        self._stop_process()
        self.start()

    def _stop_process(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(30)
        if self._worker is not None:
            self._worker.stop()
        if self._client is not None:
            self._client.close()
        self._server = self._thread = self._worker = self._client = None

    def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return request_at(self.base_url, method, path, body, **kwargs)


HttpHost = RunningHost | RunningWorkerHost
# Serves agents over HTTP: `serve(make_agent, settings=None)`, on the host the test is parametrized with (conftest).
Serve = Callable[..., HttpHost]


@contextmanager
def worker_turns(agent: Agent, settings: HostSettings, clock: Clock) -> Iterator[CommitTurn]:
    """`bench.retention_budget`'s turns on a worker (a `TurnHost`): each signalled to the conversation entity on an
    in-memory backend of its own, waited for as `AgentClient.turn` waits, and the stored text read back."""
    CONVERSATION_CACHE.clear()  # the entity function's replays share this process's cache
    port = free_port()
    backend = create_test_backend(port=port)
    worker = TaskHubGrpcWorker(host_address=f"localhost:{port}", **worker_options())
    AgentWorker(worker, [agent], settings=settings, clock=clock)
    worker.start()
    client = TaskHubGrpcClient(host_address=f"localhost:{port}")
    entity = EntityInstanceId(ENTITY, "budget")
    conversation = AgentClient(client, settings=settings).conversation(str(agent.name), entity.key)

    def commit(turn_id: str, text: str) -> str:
        client.signal_entity(entity, "run", {"turnId": turn_id, "message": text})
        if conversation.turn(turn_id, timeout_seconds=TURN_SECONDS)["status"] == "pending":
            raise RuntimeError(f"the entity did not settle turn {turn_id} in {TURN_SECONDS:.0f} s")
        metadata = client.get_entity(entity, include_state=True)
        return str(metadata.get_state()) if metadata is not None else ""

    try:
        yield commit
    finally:
        client.close()
        worker.stop()
        backend.stop()
        CONVERSATION_CACHE.clear()
