"""Turn streams in Azure Table storage, in the app's own storage account (rows laid out by `table_rows`).

Every call runs on the store's own loop (`ClientLoop`), where its one `TableClient` (and credential) lives; callers on
any loop await the result. The table is created on first append. An append is one transaction per 99 event rows
(or 900 KiB) and, in steady state, one round trip: the store remembers each stream's last id and the meta row's
ETag, and makes its transaction conditional on that ETag, so a stale memory (another writer, a delete) fails the
transaction cleanly and the store reads the meta row and tries again. Knows nothing about entities or HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import AzureError, ResourceExistsError, ResourceNotFoundError
from azure.data.tables import TableErrorCode, TableTransactionError, UpdateMode
from azure.data.tables.aio import TableClient

from . import table_rows
from .channel import StreamEvent
from .client_loop import ClientLoop, ClientLoopClosedError, ClientLoopStore
from .event_codec import check_append, check_read
from .host_storage import HostStorageConnection
from .store_errors import StreamStoreUnavailableError

DEFAULT_TABLE_NAME = "AgentHostStreams"
REMEMBERED_STREAMS = 1024
"""Streams whose last id and meta ETag the store keeps between appends (a few turns in flight per instance)."""
APPEND_ATTEMPTS = 4
"""Tries of one append when the meta row keeps changing under it (another writer, a delete)."""
DELETE_CONCURRENCY = 8
CLIENT_OPTIONS: dict[str, Any] = {
    "connection_timeout": 5,
    "read_timeout": 15,
    "retry_total": 2,
    "retry_backoff_factor": 0.2,
}
"""A stream is a live view: two quick retries, then fail, rather than the SDK's ten retries over minutes."""
# Plain strings: the SDK's error_code is a str, and TableErrorCode members do not hash like their values.
_STALE_VIEW_CODES = frozenset(
    code.value
    for code in (
        TableErrorCode.ENTITY_ALREADY_EXISTS,
        TableErrorCode.UPDATE_CONDITION_NOT_SATISFIED,
        TableErrorCode.RESOURCE_NOT_FOUND,
    )
)


class _TableMissingError(Exception):
    """The table does not exist (not created yet by this store, or deleted since)."""


class _StaleViewError(Exception):
    """The stream changed since the store last looked (a head exists, or the meta row moved or was deleted)."""


@dataclass(frozen=True)
class _Known:
    """A stream's last id and the ETag of its meta row (None: the stream has no meta row)."""

    last_id: int
    etag: str | None


class AzureTableStreamStore(ClientLoopStore):
    """Turn streams in an Azure Table (one partition per stream), created on first use.

    Every method raises `StreamStoreUnavailableError` when the service cannot be reached or refuses.
    """

    def __init__(self, connection: HostStorageConnection, table_name: str = DEFAULT_TABLE_NAME) -> None:
        """Prepare the store; nothing is opened until the first call.

        Args:
            connection: The storage account's connection (see `host_storage_connection`).
            table_name: The table, 3-63 letters and digits starting with a letter.
        """
        self.connection = connection
        self.table_name = table_name
        self._where = f"Azure Table {table_name!r} at {connection.describe()}"
        self._loop = ClientLoop("agent-host-table-streams")
        # Touched only on the store's own loop, so no lock.
        self._client: TableClient | None = None
        self._table_ready = False
        self._known: OrderedDict[str, _Known] = OrderedDict()

    def _table(self) -> TableClient:
        """The store's client, made on first use on the store's loop (the loop its connections belong to)."""
        if self._client is None:
            connection_string, endpoint = self.connection.connection_string, self.connection.table_endpoint
            if connection_string is not None:
                self._client = TableClient.from_connection_string(connection_string, self.table_name, **CLIENT_OPTIONS)
            elif endpoint is not None:
                credential = self.connection.credential()
                self._client = TableClient(endpoint, self.table_name, credential=credential, **CLIENT_OPTIONS)
            else:
                raise ValueError("A storage connection needs a connection string or a Table service endpoint.")
        return self._client

    async def _run(self, action: str, work: Any) -> Any:
        """Run `work` (a coroutine) on the store's loop; service failures become `StreamStoreUnavailableError`."""
        try:
            return await self._loop.run(work)
        except ClientLoopClosedError as exc:
            raise StreamStoreUnavailableError(self._where, action, "the store was closed") from exc
        except AzureError as exc:
            raise StreamStoreUnavailableError(self._where, action, exc) from exc

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        """Add events to the end of a stream; events whose id is not above the stream's last id are skipped."""
        check_append(stream, events)
        if events:
            await self._run(f"append to stream {stream!r}", self._append(table_rows.partition_key(stream), events))

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events with ids greater than `after`, in order, at most `limit` of them."""
        check_read(after, limit)
        return await self._run(f"read stream {stream!r}", self._read(table_rows.partition_key(stream), after, limit))

    async def last_id(self, stream: str) -> int:
        """The id of the stream's last stored event, 0 for an empty or unknown stream."""
        known = await self._run(f"read stream {stream!r}", self._read_meta(table_rows.partition_key(stream)))
        return known.last_id

    async def delete(self, streams: Sequence[str]) -> None:
        """Delete these streams entirely (unknown ones are ignored)."""
        partitions = list(dict.fromkeys(table_rows.partition_key(stream) for stream in streams))
        if partitions:
            await self._run(f"delete {len(partitions)} stream(s)", self._delete(partitions))

    async def close_client(self, client: TableClient) -> None:
        """Close the table client and, when the store made it, the credential it was given."""
        credential = client.credential if self.connection.connection_string is None else None
        await client.close()
        if credential is not None and hasattr(credential, "close"):
            await credential.close()

    # The coroutines below run on the store's own loop.

    async def _append(self, partition: str, events: Sequence[StreamEvent]) -> None:
        known = self._known.pop(partition, None)
        for _ in range(APPEND_ATTEMPTS):
            remembered = known is not None
            if known is None:
                known = await self._read_meta(partition)
            fresh = [event for event in events if event.id > known.last_id]
            if not fresh and remembered:
                known = None  # only a write checks what the store remembers: read before skipping everything
                continue
            if not fresh:
                self._remember(partition, known)
                return
            try:
                known = await self._write(partition, fresh, known)
            except _StaleViewError:
                known = None
                continue
            self._remember(partition, known)
            return
        raise StreamStoreUnavailableError(
            self._where, f"append to partition {partition!r}", "the stream kept changing during the append"
        )

    async def _write(self, partition: str, events: Sequence[StreamEvent], known: _Known) -> _Known:
        """Write events in transactions; each one that adds heads moves the meta row, conditional on its ETag."""
        plans = table_rows.plan_transactions(table_rows.rows_of(partition, event) for event in events)
        for plan in plans:
            operations: list[tuple[Any, ...]] = [
                ("create", row) if table_rows.is_head(row["RowKey"]) else ("upsert", row, {"mode": UpdateMode.REPLACE})
                for row in plan.rows
            ]
            if plan.last_head_id:
                meta = table_rows.meta_row(partition, plan.last_head_id)
                if known.etag is None:
                    operations.append(("create", meta))
                else:
                    conditions = {
                        "mode": UpdateMode.REPLACE,
                        "etag": known.etag,
                        "match_condition": MatchConditions.IfNotModified,
                    }
                    operations.append(("update", meta, conditions))
            results = await self._submit(operations)
            if plan.last_head_id:
                known = _Known(plan.last_head_id, str(results[-1]["etag"]))
        return known

    async def _submit(self, operations: list[tuple[Any, ...]]) -> list[Any]:
        """Submit one transaction, creating the table first when this store has not seen it (or it was deleted)."""
        if not self._table_ready:
            await self._create_table()
        try:
            return await self._submit_once(operations)
        except _TableMissingError:
            await self._create_table()
            return await self._submit_once(operations)

    async def _submit_once(self, operations: list[tuple[Any, ...]]) -> list[Any]:
        try:
            return list(await self._table().submit_transaction(operations))
        except TableTransactionError as exc:
            # The SDK's error decoder sets error_code; the class does not declare it.
            code = exc.error_code  # type: ignore[attr-defined]
            if code == TableErrorCode.TABLE_NOT_FOUND.value:
                raise _TableMissingError from exc
            if code in _STALE_VIEW_CODES:
                raise _StaleViewError from exc
            raise

    async def _create_table(self) -> None:
        with contextlib.suppress(ResourceExistsError):
            await self._table().create_table()
        self._table_ready = True

    async def _read_meta(self, partition: str) -> _Known:
        try:
            meta = await self._table().get_entity(partition, table_rows.META_ROW_KEY)
        except ResourceNotFoundError:  # no meta row, or no table yet
            return _Known(0, None)
        return _Known(table_rows.last_id_of(meta), meta.metadata["etag"])

    async def _read(self, partition: str, after: int, limit: int) -> list[StreamEvent]:
        rows: list[Any] = []
        heads = 0
        query = self._table().query_entities(
            "PartitionKey eq @partition and RowKey ge @first and RowKey lt @end",
            parameters={
                "partition": partition,
                "first": table_rows.head_row_key(after + 1),
                "end": table_rows.EVENT_ROWS_END,
            },
            results_per_page=min(1000, limit + 1),
        )
        try:
            async for row in query:
                if table_rows.is_head(row["RowKey"]):
                    heads += 1
                    if heads > limit:  # the head after the last event wanted: that event's rows are all read
                        break
                rows.append(row)
        except ResourceNotFoundError:  # no table yet: no stream
            return []
        try:
            return table_rows.events_from_rows(rows, limit)
        except ValueError as exc:
            raise StreamStoreUnavailableError(self._where, f"read partition {partition!r}", exc) from exc

    async def _delete(self, partitions: list[str]) -> None:
        gate = asyncio.Semaphore(DELETE_CONCURRENCY)

        async def delete_partition(partition: str) -> None:
            async with gate:
                self._known.pop(partition, None)
                query = self._table().query_entities(
                    "PartitionKey eq @partition", parameters={"partition": partition}, select=["RowKey"]
                )
                try:
                    keys = [row["RowKey"] async for row in query]
                except ResourceNotFoundError:  # no table yet: nothing to delete
                    return
                for start in range(0, len(keys), 100):
                    batch = [
                        ("delete", {"PartitionKey": partition, "RowKey": key}) for key in keys[start : start + 100]
                    ]
                    try:
                        await self._table().submit_transaction(batch)
                    except TableTransactionError as exc:
                        # A row deleted meanwhile (a concurrent delete): delete what is left one by one. (The SDK
                        # sets error_code; the class does not declare it.)
                        if exc.error_code != TableErrorCode.RESOURCE_NOT_FOUND:  # type: ignore[attr-defined]
                            raise
                        for _, row in batch:
                            await self._table().delete_entity(row["PartitionKey"], row["RowKey"])

        await asyncio.gather(*(delete_partition(partition) for partition in partitions))

    def _remember(self, partition: str, known: _Known) -> None:
        self._known[partition] = known
        self._known.move_to_end(partition)
        while len(self._known) > REMEMBERED_STREAMS:
            self._known.popitem(last=False)
