"""The standalone worker's fixtures: durabletask's in-memory backend (a real gRPC sidecar in this process), emptied
for each test. Workers and AgentClients on it come from `workers.py`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend
from hosting import free_port

from agent_host._conversation.state_cache import CONVERSATION_CACHE


@pytest.fixture(scope="session")
def in_memory_backend() -> Iterator[tuple[InMemoryOrchestrationBackend, str]]:
    """The backend, started once for the session, and its address."""
    port = free_port()
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
