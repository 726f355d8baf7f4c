"""The standalone worker's fixtures: durabletask's in-memory backend (a real gRPC sidecar in this process), emptied
for each test. Workers and AgentClients on it come from `workers.py`."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend

from agent_host._conversation.state_cache import CONVERSATION_CACHE


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
