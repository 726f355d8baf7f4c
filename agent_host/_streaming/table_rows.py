"""How a turn stream is laid out in Azure Table storage: keys, rows of one event, and transactions of rows.

Facts of the service this layout follows (Table service data model; entity group transactions):
- PartitionKey and RowKey may not contain `/`, `\\`, `#`, `?` or control characters (U+0000-U+001F,
  U+007F-U+009F), and are at most 1 KiB.
- An entity is at most 1 MiB with at most 252 properties of its own; an `Edm.Binary` property holds at most 64 KiB.
- A transaction (entity group transaction) covers one partition, at most 100 entities, each once, and at most 4 MiB
  of payload; binary values travel base64-encoded, a third larger than they are.

One stream is one partition (its escaped key). Each event has a head row, RowKey = the zero-padded id, holding the
event's name and the first part of its JSON data; data longer than one row continues in rows that sort right after
the head and carry a tag the head names, so rows left by a failed write are never read as part of an event. A
`meta` row holds the stream's last id; it sorts after every event row. Pure functions: no client, no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from azure.data.tables import EdmType, EntityProperty

from .channel import StreamEvent
from .event_codec import decode_data, encode_data

KEY_ESCAPE = "~"
"""Starts an escape (`~2F` for `/`) in a partition key; escaped itself, so every stream key maps to one partition."""
_ESCAPED = frozenset("/\\#?%" + KEY_ESCAPE) | frozenset(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
MAX_KEY_BYTES = 1024
"""A key is at most 1 KiB; counted in UTF-16, the service's own encoding, so it holds however 1 KiB is read."""

ID_DIGITS = 12
"""Row keys are ids padded to 12 digits, so string order is id order up to 999,999,999,999."""
META_ROW_KEY = "meta"
EVENT_ROWS_END = ":"
"""The character after the digits: `RowKey lt ':'` reads event rows and never the meta row."""
LAST_ID_PROPERTY = "lastId"

PART_BYTES = 64 * 1024
"""The most one `Edm.Binary` property holds."""
PARTS_PER_ROW = 10
"""640 KiB of data a row, 854 KiB base64-encoded: under the 1 MiB entity limit whichever way it is counted."""
TRANSACTION_ROWS = 99
"""Event rows per transaction: 100 entities, less the meta row every transaction that adds a head updates."""
TRANSACTION_BYTES = 900 * 1024
"""Encoded row bytes per transaction: the service takes 4 MiB, but aiohttp (under the Azure SDK) warns that a request
body over 1 MiB may hold up its event loop, so a transaction stays under 1 MiB and a large event takes several."""

NAME_PROPERTY = "event"
SIZE_PROPERTY = "size"
ROWS_PROPERTY = "rows"
TAG_PROPERTY = "tag"


def partition_key(stream: str) -> str:
    """The PartitionKey of a stream: its key with the characters Table keys forbid (and `%`, `~`) escaped.

    Raises:
        ValueError: the escaped key is over 1 KiB.
    """
    escaped = "".join(f"{KEY_ESCAPE}{ord(char):02X}" if char in _ESCAPED else char for char in stream)
    size = len(escaped.encode("utf-16-le", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise ValueError(
            f"Stream key {stream[:60]!r}... is {size} bytes as an Azure Table key, over the {MAX_KEY_BYTES}-byte "
            f"limit; use shorter agent names, conversation ids or turn ids."
        )
    return escaped


def stream_of(partition: str) -> str:
    """The stream key a PartitionKey was made from (the inverse of `partition_key`)."""
    parts = partition.split(KEY_ESCAPE)
    return parts[0] + "".join(chr(int(part[:2], 16)) + part[2:] for part in parts[1:])


def head_row_key(event_id: int) -> str:
    """The RowKey of an event's head row."""
    return f"{event_id:0{ID_DIGITS}d}"


def _continuation_row_key(event_id: int, tag: str, index: int) -> str:
    return f"{head_row_key(event_id)}.{tag}.{index:04d}"


@dataclass(frozen=True)
class EventRows:
    """The rows of one event: continuation rows (written first) and the head row (written last)."""

    event_id: int
    head: dict[str, Any]
    continuation: list[dict[str, Any]] = field(default_factory=list)

    def in_write_order(self) -> list[dict[str, Any]]:
        """Continuation rows before the head: once a reader sees the head, the whole event is stored."""
        return [*self.continuation, self.head]


def rows_of(partition: str, event: StreamEvent) -> EventRows:
    """The rows one event is stored in.

    Args:
        partition: The stream's PartitionKey.
        event: The event.

    Returns:
        Its head row and, for data over 640 KiB, the rows its data continues in.
    """
    data = encode_data(event.data).encode("utf-8")
    row_bytes = PART_BYTES * PARTS_PER_ROW
    chunks = [data[start : start + row_bytes] for start in range(0, len(data), row_bytes)]
    head: dict[str, Any] = {
        "PartitionKey": partition,
        "RowKey": head_row_key(event.id),
        NAME_PROPERTY: event.event,
        SIZE_PROPERTY: EntityProperty(len(data), EdmType.INT64),
        ROWS_PROPERTY: len(chunks) - 1,
        **_parts(chunks[0]),
    }
    if len(chunks) == 1:
        return EventRows(event.id, head)
    # A fresh tag per write: rows of an earlier, failed write of this id can never be mixed into this one.
    tag = uuid.uuid4().hex[:12]
    head[TAG_PROPERTY] = tag
    continuation = [
        {"PartitionKey": partition, "RowKey": _continuation_row_key(event.id, tag, index), **_parts(chunk)}
        for index, chunk in enumerate(chunks[1:], start=1)
    ]
    return EventRows(event.id, head, continuation)


def _parts(chunk: bytes) -> dict[str, bytes]:
    """One row's data as binary properties `p0`, `p1`, ... of at most 64 KiB each."""
    starts = range(0, len(chunk), PART_BYTES)
    return {f"p{index}": chunk[start : start + PART_BYTES] for index, start in enumerate(starts)}


def _row_data(row: Mapping[str, Any]) -> bytes:
    parts: list[bytes] = []
    while (part := row.get(f"p{len(parts)}")) is not None:
        parts.append(bytes(part))
    return b"".join(parts)


def encoded_size(row: Mapping[str, Any]) -> int:
    """About how many bytes a row takes in a transaction's payload (binary data base64-encoded, plus framing)."""
    data = sum(len(value) for value in row.values() if isinstance(value, bytes))
    return data * 4 // 3 + 1024


@dataclass(frozen=True)
class TransactionPlan:
    """The event rows of one transaction, in order, and the highest event id whose head it adds (0 for none)."""

    rows: list[dict[str, Any]]
    last_head_id: int


def plan_transactions(events: Iterable[EventRows]) -> list[TransactionPlan]:
    """Group rows into transactions, keeping write order, each under the row and payload limits.

    Write order puts every event's continuation rows before its head and events in id order, so whatever prefix of
    the transactions commits, readers see whole events only, in order.
    """
    plans: list[TransactionPlan] = []
    rows: list[dict[str, Any]] = []
    size = 0
    last_head = 0
    for event in events:
        for row in event.in_write_order():
            row_size = encoded_size(row)
            if rows and (len(rows) == TRANSACTION_ROWS or size + row_size > TRANSACTION_BYTES):
                plans.append(TransactionPlan(rows, last_head))
                rows, size, last_head = [], 0, 0
            rows.append(row)
            size += row_size
            if row is event.head:
                last_head = event.event_id
    if rows:
        plans.append(TransactionPlan(rows, last_head))
    return plans


def is_head(row_key: str) -> bool:
    """Whether a RowKey is an event's head row (continuation rows carry a tag after the id)."""
    return len(row_key) == ID_DIGITS


def events_from_rows(rows: Iterable[Mapping[str, Any]], limit: int) -> list[StreamEvent]:
    """Whole events from rows read in RowKey order, at most `limit` of them.

    To be sure the last event is whole, read on until the head after it (or the end of the partition).

    Continuation rows without their head (a write in progress or one that failed) are skipped. An event whose
    rows are not all there (deleted while being read) ends the list: no event is returned cut short or out of order.

    Raises:
        ValueError: a head's data is not a JSON object.
    """
    events: list[StreamEvent] = []
    for head, continuation in _grouped(rows):
        if len(events) == limit:
            break
        data = _row_data(head) + b"".join(_row_data(row) for row in continuation)
        if len(continuation) != _integer(head.get(ROWS_PROPERTY, 0)) or len(data) != _integer(head[SIZE_PROPERTY]):
            break
        events.append(StreamEvent(int(head["RowKey"]), str(head[NAME_PROPERTY]), decode_data(data)))
    return events


def _grouped(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]:
    """Each head row with its own continuation rows (those with the head's id and tag), lazily."""
    head: Mapping[str, Any] | None = None
    continuation: list[Mapping[str, Any]] = []
    for row in rows:
        key = str(row["RowKey"])
        if is_head(key):
            if head is not None:
                yield head, continuation
            head, continuation = row, []
        elif head is not None and key.startswith(f"{head['RowKey']}.{head.get(TAG_PROPERTY)}."):
            continuation.append(row)
    if head is not None:
        yield head, continuation


def last_id_of(meta: Mapping[str, Any] | None) -> int:
    """The last event id a meta row records (0 when the stream has none)."""
    return 0 if meta is None else _integer(meta.get(LAST_ID_PROPERTY, 0))


def meta_row(partition: str, last_id: int) -> dict[str, Any]:
    """The meta row recording a stream's last id."""
    return {"PartitionKey": partition, "RowKey": META_ROW_KEY, LAST_ID_PROPERTY: EntityProperty(last_id, EdmType.INT64)}


def _integer(value: Any) -> int:
    """An integer property as read back: `Edm.Int64` values come wrapped in an `EntityProperty`."""
    return int(value.value if isinstance(value, EntityProperty) else value)
