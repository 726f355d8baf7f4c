"""Which turn stream store an app uses, chosen from its settings in one ordered place.

Precedence, first match wins:
1. `AGENT_HOST_STREAM_STORE`: `sqlite:<path>`, `azure`, or a `redis://` / `rediss://` URL.
2. The local host (`python -m agent_host serve`): `<state_dir>/streams.sqlite3`, beside its entity store.
3. The app's storage account, from `AzureWebJobsStorage` or its identity-based `AzureWebJobsStorage__*` settings:
   an Azure Table named for the task hub (`<TASKHUB_NAME>Streams`).
4. Nothing: a store that fails at first use with `StreamStoreNotConfiguredError`, naming the setting; the app
   itself starts, and turns without streaming run as before.
Backends are imported only when chosen. Knows nothing about entities or HTTP.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

from .channel import StreamEvent, TurnStreamStore
from .host_storage import CONNECTION_SETTING, host_storage_connection
from .store_errors import STREAM_STORE_SETTING, StreamStoreNotConfiguredError

TASK_HUB_SETTING = "TASKHUB_NAME"
AZURE_CHOICE = "azure"
SQLITE_PREFIX = "sqlite:"
REDIS_SCHEMES = ("redis://", "rediss://")
_TASK_HUB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{2,44}")


def stream_store_from_settings(
    environ: Mapping[str, str] | None = None,
    *,
    local_state_dir: str | pathlib.Path | None = None,
    ttl_seconds: float | None = None,
) -> TurnStreamStore:
    """The turn stream store the settings choose (see the module's precedence).

    Args:
        environ: The app settings; `os.environ` when None.
        local_state_dir: The local host's state directory, when the app runs on it.
        ttl_seconds: How long a Redis stream lives after its last append (the Redis store's default when None);
            pass the turn receipts' TTL so a stream never outlives its receipt by much.

    Returns:
        The store. Nothing is connected yet: clients open on first use.

    Raises:
        ValueError: `AGENT_HOST_STREAM_STORE` or the storage settings are present but not valid; the message names
            the setting and says what to set.
    """
    env = os.environ if environ is None else environ
    choice = (env.get(STREAM_STORE_SETTING) or "").strip()
    if choice:
        return _store_named(choice, env, ttl_seconds)
    if local_state_dir is not None:
        from .sqlite_store import SqliteStreamStore

        return SqliteStreamStore.in_state_dir(local_state_dir)
    if host_storage_connection(env) is not None:
        return _azure_store(env)
    return UnconfiguredStreamStore()


def check_stream_store_setting(environ: Mapping[str, str] | None = None) -> None:
    """Refuse an `AGENT_HOST_STREAM_STORE` that names no store, without building or connecting to one.

    For startup, so a wrong value is reported then rather than at the first streamed turn.

    Raises:
        ValueError: as `stream_store_from_settings`.
    """
    env = os.environ if environ is None else environ
    choice = (env.get(STREAM_STORE_SETTING) or "").strip()
    if choice:
        _named_store_factory(choice, env, None)


def _store_named(choice: str, env: Mapping[str, str], ttl_seconds: float | None) -> TurnStreamStore:
    """The store `AGENT_HOST_STREAM_STORE` names."""
    return _named_store_factory(choice, env, ttl_seconds)()


def _named_store_factory(
    choice: str, env: Mapping[str, str], ttl_seconds: float | None
) -> Callable[[], TurnStreamStore]:
    """Builds the store `AGENT_HOST_STREAM_STORE` names; the value is checked now, the store built when called.

    Raises:
        ValueError: the value names no store, or the store it names lacks a setting it needs.
    """
    if choice.startswith(SQLITE_PREFIX):
        path = choice[len(SQLITE_PREFIX) :].strip()
        if not path:
            raise ValueError(
                f"{STREAM_STORE_SETTING}=sqlite: needs a file path, e.g. 'sqlite:.agent_host/streams.sqlite3'."
            )

        def sqlite_store() -> TurnStreamStore:
            from .sqlite_store import SqliteStreamStore

            return SqliteStreamStore(path)

        return sqlite_store
    if choice.lower() == AZURE_CHOICE:
        if host_storage_connection(env) is None:
            raise ValueError(
                f"{STREAM_STORE_SETTING}=azure uses the app's storage account, but neither {CONNECTION_SETTING} nor "
                f"{CONNECTION_SETTING}__tableServiceUri / {CONNECTION_SETTING}__accountName is set."
            )
        table_name_for(env.get(TASK_HUB_SETTING), "")  # refuses a task hub name now, not when the store is built
        return lambda: _azure_store(env)
    if choice.lower().startswith(REDIS_SCHEMES):

        def redis_store() -> TurnStreamStore:
            from .redis_store import RedisStreamStore

            if ttl_seconds is None:
                return RedisStreamStore(choice)
            return RedisStreamStore(choice, ttl_seconds=ttl_seconds)

        return redis_store
    scheme = choice.split(":", 1)[0]  # never echo the rest: a URL may carry a password
    raise ValueError(
        f"{STREAM_STORE_SETTING} must be 'sqlite:<path>', 'azure', or a redis:// or rediss:// URL; got a value "
        f"starting {scheme[:20]!r}."
    )


def _azure_store(env: Mapping[str, str]) -> TurnStreamStore:
    """The app's storage account's Table store, its table named for the task hub."""
    from .azure_table_store import DEFAULT_TABLE_NAME, AzureTableStreamStore

    connection = host_storage_connection(env)
    if connection is None:
        raise ValueError(f"No storage connection: set {CONNECTION_SETTING} or its identity-based settings.")
    return AzureTableStreamStore(connection, table_name_for(env.get(TASK_HUB_SETTING), DEFAULT_TABLE_NAME))


def table_name_for(task_hub: str | None, default: str) -> str:
    """`<task hub>Streams`: apps sharing a storage account keep their streams apart, as Durable Functions keeps
    its own `<task hub>Instances` and `<task hub>History` tables.

    Raises:
        ValueError: the task hub name is not one Durable Functions accepts.
    """
    hub = (task_hub or "").strip()
    if not hub:
        return default
    if not _TASK_HUB_NAME.fullmatch(hub):
        raise ValueError(
            f"{TASK_HUB_SETTING} must be 3-45 letters and digits starting with a letter (Durable Functions' rule); "
            f"got {hub!r}."
        )
    return f"{hub}Streams"


class UnconfiguredStreamStore:
    """The store of an app with no stream store configured: streaming through it raises
    `StreamStoreNotConfiguredError`; deleting is a no-op, as no stream can exist without a store."""

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        """Raise `StreamStoreNotConfiguredError`."""
        _not_configured()

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        """Raise `StreamStoreNotConfiguredError`."""
        _not_configured()

    async def last_id(self, stream: str) -> int:
        """Raise `StreamStoreNotConfiguredError`."""
        _not_configured()

    async def delete(self, streams: Sequence[str]) -> None:
        """Nothing to delete: turn records can be evicted in an app that never streamed."""


def _not_configured() -> NoReturn:
    raise StreamStoreNotConfiguredError()
