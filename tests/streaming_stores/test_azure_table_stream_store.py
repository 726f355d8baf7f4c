"""The Azure Table store against Azurite: what it writes, its table, and what it does when its memory is stale."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from azure.data.tables import TableClient, TableServiceClient
from hosting import free_port

from agent_host._streaming.azure_table_store import AzureTableStreamStore
from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent
from agent_host._streaming.host_storage import HostStorageConnection
from agent_host._streaming.store_errors import StreamStoreUnavailableError

from .backing_services import AZURITE_KEY, azurite_connection_string


@pytest.fixture
def table_name() -> str:
    return f"t{uuid.uuid4().hex[:12]}Streams"


@pytest.fixture
def stores(azurite: str, table_name: str) -> Iterator[list[AzureTableStreamStore]]:
    """Two store objects on one table, as on two instances of the app; closed after the test."""
    made = [AzureTableStreamStore(HostStorageConnection(connection_string=azurite), table_name) for _ in range(2)]
    yield made
    for store in made:
        store.close()


def raw_rows(azurite: str, table_name: str) -> list[dict[str, Any]]:
    with TableClient.from_connection_string(azurite, table_name) as table:
        return [dict(row) for row in table.list_entities()]


def deltas(first: int, last: int, prefix: str = "part") -> list[StreamEvent]:
    return [StreamEvent(n, MESSAGE_DELTA, {"text": f"{prefix} {n}"}) for n in range(first, last + 1)]


def test_the_table_is_created_by_the_first_append_not_by_reads(
    azurite: str, table_name: str, stores: list[AzureTableStreamStore]
) -> None:
    store = stores[0]

    empty = asyncio.run(store.read("a/c/t")), asyncio.run(store.last_id("a/c/t"))
    with TableServiceClient.from_connection_string(azurite) as service:
        before = {table.name for table in service.list_tables()}
    asyncio.run(store.append("a/c/t", deltas(1, 1)))
    with TableServiceClient.from_connection_string(azurite) as service:
        after = {table.name for table in service.list_tables()}

    assert empty == ([], 0)
    assert table_name not in before
    assert table_name in after


def test_a_stream_is_one_partition_of_padded_event_rows_and_a_meta_row(
    azurite: str, table_name: str, stores: list[AzureTableStreamStore]
) -> None:
    asyncio.run(stores[0].append("assistant/c1/t#1", deltas(1, 2)))

    rows = raw_rows(azurite, table_name)

    assert [(row["PartitionKey"], row["RowKey"]) for row in rows] == [
        ("assistant~2Fc1~2Ft~231", "000000000001"),
        ("assistant~2Fc1~2Ft~231", "000000000002"),
        ("assistant~2Fc1~2Ft~231", "meta"),
    ]
    assert rows[0]["event"] == MESSAGE_DELTA
    assert rows[0]["p0"] == b'{"text":"part 1"}'
    assert rows[2]["lastId"].value == 2


def test_a_two_mib_event_is_stored_in_rows_of_64_kib_parts_and_read_back_whole(
    azurite: str, table_name: str, stores: list[AzureTableStreamStore]
) -> None:
    event = StreamEvent(1, "tool.result", {"result": "r" * (2 * 1024 * 1024)})

    asyncio.run(stores[0].append("a/c/t", [event]))
    rows = raw_rows(azurite, table_name)

    event_rows = [row for row in rows if row["RowKey"] != "meta"]
    assert len(event_rows) == 4  # 2 MiB of JSON over rows of 640 KiB
    assert all(len(value) <= 64 * 1024 for row in event_rows for value in row.values() if isinstance(value, bytes))
    assert asyncio.run(stores[1].read("a/c/t")) == [event]


def test_a_store_whose_memory_is_stale_reads_the_stream_again(stores: list[AzureTableStreamStore]) -> None:
    first, second = stores
    asyncio.run(first.append("a/c/t", deltas(1, 2, "first")))  # first now remembers last id 2

    asyncio.run(second.append("a/c/t", deltas(3, 4, "second")))  # the stream moves on without first
    asyncio.run(first.append("a/c/t", deltas(3, 6, "first")))  # its conditional write fails; it reads and retries

    assert [event.data["text"] for event in asyncio.run(second.read("a/c/t"))] == [
        "first 1",
        "first 2",
        "second 3",
        "second 4",
        "first 5",
        "first 6",
    ]
    assert asyncio.run(first.last_id("a/c/t")) == 6


def test_a_stale_store_cannot_move_the_last_id_back(stores: list[AzureTableStreamStore]) -> None:
    first, second = stores
    asyncio.run(first.append("a/c/t", deltas(1, 4)))  # first remembers last id 4

    asyncio.run(second.append("a/c/t", deltas(7, 8)))  # the stream's last id is now 8
    asyncio.run(first.append("a/c/t", deltas(5, 6)))  # below the last id: skipped, as every store skips it

    assert [event.id for event in asyncio.run(second.read("a/c/t"))] == [1, 2, 3, 4, 7, 8]
    assert asyncio.run(second.last_id("a/c/t")) == 8


def test_a_stream_deleted_by_another_instance_is_written_again(stores: list[AzureTableStreamStore]) -> None:
    first, second = stores
    asyncio.run(first.append("a/c/t", deltas(1, 3, "old")))

    asyncio.run(second.delete(["a/c/t"]))
    asyncio.run(first.append("a/c/t", deltas(1, 2, "new")))  # first remembers last id 3: it must not skip these

    assert [event.data["text"] for event in asyncio.run(second.read("a/c/t"))] == ["new 1", "new 2"]


def test_the_table_is_created_again_when_it_was_deleted(
    azurite: str, table_name: str, stores: list[AzureTableStreamStore]
) -> None:
    store = stores[0]
    asyncio.run(store.append("a/c/t", deltas(1, 1)))
    with TableServiceClient.from_connection_string(azurite) as service:
        service.delete_table(table_name)

    asyncio.run(store.append("a/c/t", deltas(1, 2)))

    assert [event.id for event in asyncio.run(store.read("a/c/t"))] == [1, 2]


def test_an_unreachable_service_fails_in_seconds_with_a_store_error_and_no_key() -> None:
    connection = HostStorageConnection(connection_string=azurite_connection_string(free_port()))
    store = AzureTableStreamStore(connection, "nobodyStreams")
    try:
        started = time.monotonic()
        with pytest.raises(StreamStoreUnavailableError, match="could not append to stream 'a/c/t'") as raised:
            asyncio.run(store.append("a/c/t", deltas(1, 1)))
        failed_after = time.monotonic() - started
    finally:
        store.close()

    assert failed_after < 5
    assert "nobodyStreams" in raised.value.message
    assert AZURITE_KEY not in raised.value.message
    assert raised.value.code == "storage_unavailable"
