"""Workers that start and stop around the agents a test hosts, and AgentClients, on a task hub's address (the
`hub` fixture's, in conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agent_framework import SupportsAgentRun
from durabletask.client import TaskHubGrpcClient
from durabletask.worker import TaskHubGrpcWorker

from agent_host import HostSettings, TurnStreamStore
from agent_host.worker import AgentClient, AgentWorker, worker_options


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
