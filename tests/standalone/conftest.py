"""The standalone worker's fixtures: durabletask's in-memory backend (a real gRPC sidecar in this process), workers
that start and stop around the agents a test hosts, and AgentClients on the same task hub."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from agent_framework import SupportsAgentRun
from durabletask.client import TaskHubGrpcClient
from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend
from durabletask.worker import TaskHubGrpcWorker

from agent_host import HostSettings, TurnStreamStore
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host.worker import AgentClient, AgentWorker, worker_options


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def in_memory_backend() -> Iterator[tuple[InMemoryOrchestrationBackend, str]]:
    """The backend, started once for the session, and its address."""
    port = _free_port()
    backend = create_test_backend(port=port)
    yield backend, f"localhost:{port}"
    backend.stop()


@pytest.fixture
def hub(in_memory_backend: tuple[InMemoryOrchestrationBackend, str]) -> Iterator[str]:
    """The backend's address, emptied for the test (and the state cache with it, as a fresh process has none)."""
    backend, address = in_memory_backend
    backend.reset()
    CONVERSATION_CACHE.clear()
    yield address
    CONVERSATION_CACHE.clear()


@contextmanager
def running_worker(
    address: str,
    agents: Sequence[SupportsAgentRun],
    *,
    settings: HostSettings | None = None,
    stream_store: TurnStreamStore | None = None,
    **kwargs: Any,
) -> Iterator[AgentWorker]:
    """A started worker hosting `agents` (writing turn streams to `stream_store`); orchestrators in
    `kwargs["orchestrators"]` are registered too."""
    worker = TaskHubGrpcWorker(host_address=address, **worker_options())
    hosted = AgentWorker(worker, agents, settings=settings or HostSettings(), stream_store=stream_store)
    for orchestrator in kwargs.get("orchestrators", ()):
        worker.add_orchestrator(orchestrator)
    worker.start()
    try:
        yield hosted
    finally:
        worker.stop()


@contextmanager
def agent_client(address: str, **kwargs: Any) -> Iterator[AgentClient]:
    client = TaskHubGrpcClient(host_address=address)
    try:
        yield AgentClient(client, settings=kwargs.pop("settings", None) or HostSettings(), **kwargs)
    finally:
        client.close()
