"""A turn's journal: the steps a running turn completed (model responses and tool results), kept in the turn stream
store so a re-run of the turn can replay them instead of repeating them.

A journal is one more stream of the store, beside the turn's own stream and under the same settings (SQLite, Azure
Tables, Redis): its entries are events with ids from 1, appended one per step, read back whole, and deleted like
streams (with a Redis store's TTL, too). Knows the store protocol, nothing about core's types or the entity.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from .channel import StreamEvent, TurnStreamStore

MODEL_RESPONSE = "model.response"
TOOL_STARTED = "tool.started"
"""A tool call's start: written only for a call no journaled model response asked for (one the turn's input
approved); writers before the response became the evidence wrote one for every tool call, and they are still read."""
TOOL_RESULT = "tool.result"
JOURNAL_SUFFIX = "/journal"
"""A journal's key is its turn's stream key and this suffix: no turn id holds a '/', so no stream key ends so."""
_READ_PAGE = 1000


def journal_key(stream: str) -> str:
    """The key of the journal of the turn whose stream key is `stream`."""
    return f"{stream}{JOURNAL_SUFFIX}"


def tool_key(after_call: int, call_id: str) -> str:
    """A tool call's key in a journal: the number of the model call that asked for it (0 before any), and its id."""
    return f"{after_call}/{call_id}"


@dataclass
class JournalEntries:
    """What a journal holds, by step.

    Attributes:
        responses: Each journaled model response's data, by the model call's number within the turn (from 1).
        started: The keys (`tool_key`) of the tool calls whose start was journaled (`TOOL_STARTED`).
        results: Each journaled tool result's data, by its call's key.
        last_id: The id of the journal's last entry (0 when empty).
    """

    responses: dict[int, dict[str, Any]] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_id: int = 0

    def add(self, event: StreamEvent) -> None:
        """Take in one entry as read back or just written."""
        self.last_id = max(self.last_id, event.id)
        if event.event == MODEL_RESPONSE:
            self.responses[int(event.data["call"])] = event.data
        elif event.event == TOOL_STARTED:
            self.started.add(tool_key(int(event.data["afterCall"]), str(event.data["callId"])))
        elif event.event == TOOL_RESULT:
            self.results[tool_key(int(event.data["afterCall"]), str(event.data["callId"]))] = event.data


class TurnJournal:
    """The journal of one run of one turn: read once, then one store write per step.

    Args:
        store: The turn stream store.
        key: The journal's key (`journal_key(stream_key(...))`).
    """

    def __init__(self, store: TurnStreamStore, key: str) -> None:
        self.store = store
        self.key = key
        self.writes = 0
        self._entries: JournalEntries | None = None
        # Tools may run concurrently: ids are taken and written in order, or a store would skip a late lower id.
        self._lock = asyncio.Lock()

    async def entries(self) -> JournalEntries:
        """What the journal held when this run first asked (read once), with what this run wrote since."""
        async with self._lock:
            if self._entries is None:
                self._entries = await self._read_all()
            return self._entries

    async def write(self, event: str, data: dict[str, Any]) -> None:
        """Append one entry (after `entries` was read)."""
        async with self._lock:
            if self._entries is None:
                self._entries = await self._read_all()
            entry = StreamEvent(self._entries.last_id + 1, event, data)
            await self.store.append(self.key, [entry])
            self.writes += 1
            self._entries.add(entry)

    async def _read_all(self) -> JournalEntries:
        entries = JournalEntries()
        while True:
            page = await self.store.read(self.key, after=entries.last_id, limit=_READ_PAGE)
            for event in page:
                entries.add(event)
            if len(page) < _READ_PAGE:
                return entries
