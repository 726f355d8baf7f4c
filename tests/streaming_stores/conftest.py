"""Fixtures: every turn stream store, each against its real backend (SQLite file, Azurite, redis-server).

Azurite and Redis start once per session. A test gets a fresh store object; stream keys are unique per test, so
tests sharing a server never see each other's streams. A backend's tool missing here skips its tests with the
reason, except under CI (`CI=true`), where .ci/run installs them and a missing one fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_host._streaming.azure_table_store import AzureTableStreamStore
from agent_host._streaming.channel import TurnStreamStore
from agent_host._streaming.host_storage import HostStorageConnection
from agent_host._streaming.redis_store import RedisStreamStore
from agent_host._streaming.sqlite_store import SqliteStreamStore

from .backing_services import ServiceUnavailableError, running_azurite, running_redis

BACKENDS = ("sqlite", "azure_table", "redis")
StoreFactory = Callable[[], TurnStreamStore]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run every stream store against its real backend, but {reason}: .ci/run installs it.")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def azurite() -> Iterator[str]:
    """The connection string of a session-long Azurite Table service."""
    try:
        with running_azurite() as connection_string:
            yield connection_string
    except ServiceUnavailableError as exc:
        _unavailable(str(exc))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """The URL of a session-long redis-server (started by samples/redis_history/start_redis.sh)."""
    try:
        with running_redis() as url:
            yield url
    except ServiceUnavailableError as exc:
        _unavailable(str(exc))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_store(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Makes store objects of the test's backend, all on the same backing data; closes them after the test."""
    made: list[TurnStreamStore] = []
    if backend == "sqlite":

        def make() -> TurnStreamStore:
            return SqliteStreamStore(tmp_path / "streams.sqlite3")

    elif backend == "azure_table":
        connection = HostStorageConnection(connection_string=request.getfixturevalue("azurite"))

        def make() -> TurnStreamStore:
            return AzureTableStreamStore(connection, table_name="contractStreams")

    else:
        url = request.getfixturevalue("redis_server")

        def make() -> TurnStreamStore:
            return RedisStreamStore(url)

    def tracked() -> TurnStreamStore:
        store = make()
        made.append(store)
        return store

    yield tracked
    for store in made:
        store.close()  # type: ignore[attr-defined]


@pytest.fixture
def store(make_store: StoreFactory) -> TurnStreamStore:
    """One store of the test's backend."""
    return make_store()


@pytest.fixture
def stream() -> str:
    """A stream key no other test uses, shaped like the real ones."""
    return f"assistant/c-{uuid.uuid4().hex[:8]}/t-{uuid.uuid4().hex[:8]}"
