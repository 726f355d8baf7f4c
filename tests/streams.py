"""Helpers for streaming tests: an in-memory turn stream store, canned tools, and an SSE client."""

from __future__ import annotations

import asyncio
import http.client
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from agent_framework import tool

from agent_host._streaming.channel import StreamEvent, TurnStreamStore
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host._streaming.turn_controls import ACCEPTED_STREAM


class MemoryTurnStreamStore:
    """The turn stream store protocol over a dict, usable from any thread and loop; refuses ids that do not grow.

    It has no wait of its own (readers poll it) and counts its reads.
    """

    def __init__(self) -> None:
        self.streams: dict[str, list[StreamEvent]] = {}
        self.reads = 0
        self.appends: list[tuple[str, int]] = []  # (stream, events in the write)
        self.deleted: list[str] = []
        self._lock = threading.Lock()

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        with self._lock:
            stored = self.streams.setdefault(stream, [])
            last = stored[-1].id if stored else 0
            ids = [event.id for event in events]
            if ids != sorted(ids) or len(set(ids)) != len(ids) or (ids and ids[0] <= last):
                raise ValueError(f"ids {ids} do not follow {last} in {stream}")
            stored.extend(events)
            self.appends.append((stream, len(events)))

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        with self._lock:
            self.reads += 1
            return [event for event in self.streams.get(stream, []) if event.id > after][:limit]

    async def last_id(self, stream: str) -> int:
        with self._lock:
            stored = self.streams.get(stream, [])
            return stored[-1].id if stored else 0

    async def delete(self, streams: Sequence[str]) -> None:
        with self._lock:
            for stream in streams:
                self.streams.pop(stream, None)
                self.deleted.append(stream)

    def events(self, stream: str) -> list[StreamEvent]:
        with self._lock:
            return list(self.streams.get(stream, []))


class FailingTurnStreamStore(MemoryTurnStreamStore):
    """A store whose writes fail while `failing` is set (reads still work)."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = True

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        if self.failing:
            raise ConnectionError("stream store unavailable")
        await super().append(stream, events)


class HeldListReads:
    """A real store whose first `count` reads of a conversation's list of accepted turns each wait, once they have
    read, until `release` is set: requests that read the list then interleave exactly as the test says (all of them
    read before any of them goes on), however the host schedules them. `all_held` is set when `count` reads wait."""

    def __init__(self, inner: TurnStreamStore, count: int) -> None:
        self.inner = inner
        self.count = count
        self.all_held = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        events = await self.inner.read(stream, after, limit)
        if stream.endswith(f"/{ACCEPTED_STREAM}") and self._take_a_hold():
            await asyncio.to_thread(self.release.wait, 30)
        return events

    def _take_a_hold(self) -> bool:
        with self._lock:
            if self.count == 0:
                return False
            self.count -= 1
            if self.count == 0:
                self.all_held.set()
            return True

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        await self.inner.append(stream, events)

    async def last_id(self, stream: str) -> int:
        return await self.inner.last_id(stream)

    async def delete(self, streams: Sequence[str]) -> None:
        await self.inner.delete(streams)


def fill_the_disk(store: SqliteStreamStore) -> None:
    """Leave a new store's file no room, as a full disk does: from now on SQLite refuses every append that needs any
    (SQLITE_FULL, "database or disk is full"), and reads go on.

    The file may not grow past the pages it has (`max_page_count` is a setting of a connection, so it is made on the
    store's own writing connection), and the one page a new store's table has is filled with rows smaller and smaller
    until not even an empty one fits.
    """
    writer = store._writer  # the limit can only be set on the connection that writes
    assert writer is not None
    pages = writer.execute("PRAGMA page_count").fetchone()[0]
    writer.execute(f"PRAGMA max_page_count = {pages}")
    filler = 0
    for size in (1000, 100, 10, 0):
        while True:
            try:
                writer.execute("INSERT INTO turn_stream_events VALUES ('', ?, '', ?)", (filler, "x" * size))
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc), exc
                break
            filler += 1


@tool
def get_weather(city: Annotated[str, "The city."]) -> str:
    """Today's weather (canned)."""
    return f"sunny in {city}"


@tool(approval_mode="always_require")
def cancel_order(order_id: Annotated[str, "The order."]) -> str:
    """Cancel an order; needs the caller's approval (canned)."""
    return f"Order {order_id} is cancelled."


@dataclass
class Sse:
    """One parsed server-sent event."""

    event: str
    data: Any
    id: int | None = None


def parse_sse(body: bytes) -> list[Sse]:
    """Every event of a whole `text/event-stream` body (comments skipped)."""
    return [event for block in body.decode("utf-8").split("\n\n") if (event := _parse_block(block)) is not None]


def _parse_block(block: str) -> Sse | None:
    fields: dict[str, str] = {}
    for line in block.splitlines():
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(": ")
        fields[name] = value
    if "event" not in fields:
        return None
    return Sse(fields["event"], json.loads(fields["data"]), int(fields["id"]) if "id" in fields else None)


@dataclass
class OpenStream:
    """A streaming response being read event by event."""

    status: int
    headers: dict[str, str]
    connection: http.client.HTTPConnection
    response: http.client.HTTPResponse
    received: list[Sse] = field(default_factory=list)

    def events(self) -> Iterator[Sse]:
        """The events as they arrive, until the stream ends."""
        block: list[str] = []
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode("utf-8").rstrip("\r\n")
            if text:
                block.append(text)
                continue
            event = _parse_block("\n".join(block))
            block = []
            if event is not None:
                self.received.append(event)
                yield event

    def close(self) -> None:
        """Hang up, as a client that goes away does."""
        self.connection.close()


def open_stream(
    base_url: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> OpenStream:
    """Send a request asking for an event stream and return as soon as the response head arrived."""
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    sent = {"Accept": "text/event-stream", **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    connection.request(method, path, body=data, headers=sent)
    response = connection.getresponse()
    return OpenStream(response.status, {k.lower(): v for k, v in response.getheaders()}, connection, response)
