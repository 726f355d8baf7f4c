"""Reuse of decoded conversations: skip decoding when the host hands back exactly the string this process wrote.

A warm worker usually receives, for its next operation, the very state string it committed last. This cache keeps,
per conversation, the last string seen and its decoded state, with what was built from it: the core messages of
its records (`message_reuse`) and their JSON text (`fragment_encoder`). A hit is verified by string equality, so
state written by anyone else (another worker, an older version, a hand edit) is decoded and validated as usual.
What it buys (`python -m bench --parts`, two runs): a cold turn costs 1.4-1.6x a warm one at 200 and at 2,000
stored messages.

The cache is bounded by an estimate of the memory its entries hold, not by their number: a decoded conversation
holds several times its text (the text itself, its decoded records, the JSON text of each record, and a core
message per record once a run needs them), and a message costs more than its characters. The estimate's constants
were measured with tracemalloc over plain, tool-calling and compacted conversations (`python -m
bench.state_cache_memory`); docs/scaling.md relates the bound (`AGENT_HOST_STATE_CACHE_MB`) to instance memory.

Decoded states and their records are read-only values: an operation builds its new state aside (as the entity must
anyway, because the host does not roll back in-place changes), and a changed message gets a new record.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from .._settings import DEFAULT_STATE_CACHE_MB
from .fragment_encoder import FragmentEncoder
from .message_reuse import StoredMessages, WorkingHistory
from .state import MESSAGES_KEY, TURNS_KEY, decode_state_text

MB = 1024 * 1024

# What one cached conversation holds, in bytes (tracemalloc, Python 3.11, agent-framework-core 1.23): per byte of
# its state text, per stored message (the decoded record, core's Message and Content, the record's JSON text), more
# per message with annotations or non-text contents (each copied into the message and its snapshot), per turn record.
_BYTES_PER_TEXT_BYTE = 3
_BYTES_PER_MESSAGE = 2800
_BYTES_PER_RICH_MESSAGE = 2000
_BYTES_PER_TURN_RECORD = 2000


class _Entry:
    """One conversation's last string, its state, and what was built from its records."""

    __slots__ = ("encoder", "estimated_bytes", "messages", "state", "text")

    def __init__(self, text: str, state: dict[str, Any], messages: StoredMessages, encoder: FragmentEncoder) -> None:
        self.text = text
        self.state = state
        self.messages = messages
        self.encoder = encoder
        self.estimated_bytes = estimated_bytes(text, state)


def estimated_bytes(text: str, state: dict[str, Any]) -> int:
    """The memory a cached conversation holds, estimated from its text and record counts (see the constants).

    Counts the messages core builds for a run even before one needs them, so a conversation is never under-counted.
    """
    records = state.get(MESSAGES_KEY) or ()
    rich = sum(1 for record in records if "props" in record or "contents" in record)
    return (
        _BYTES_PER_TEXT_BYTE * sys.getsizeof(text)
        + _BYTES_PER_MESSAGE * len(records)
        + _BYTES_PER_RICH_MESSAGE * rich
        + _BYTES_PER_TURN_RECORD * len(state.get(TURNS_KEY) or ())
    )


class ConversationCache:
    """The decoded form of the last state string each conversation had in this process, bounded (LRU) by the
    estimated memory of what it keeps.

    Args:
        max_bytes: The most memory its entries may hold, estimated (`estimated_bytes`); 0 keeps nothing.
    """

    def __init__(self, max_bytes: int = DEFAULT_STATE_CACHE_MB * MB) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._by_records: dict[int, _Entry] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """The estimated memory of everything cached now."""
        return self._bytes

    def resize(self, max_bytes: int) -> None:
        """Bound the cache to `max_bytes` from now on, dropping the least recently used entries over it."""
        with self._lock:
            self.max_bytes = max_bytes
            self._shrink()

    def decode(self, scope: str, key: str, raw: str) -> dict[str, Any]:
        """The validated state of `raw`: the cached one when `raw` is the string last seen for this conversation.

        The returned state is shared with the cache: read it, never change it in place.

        Raises:
            StateCorruptError, StateVersionError: as `decode_state`, for a string that is not cached.
        """
        with self._lock:
            entry = self._entries.get((scope, key))
            if entry is not None and (entry.text is raw or entry.text == raw):
                self._entries.move_to_end((scope, key))
                return entry.state
        state, transcript = decode_state_text(raw)
        encoder = FragmentEncoder()
        if transcript is not None:
            # A process that did not write `raw` writes its transcript back as the text it read.
            encoder.seed_transcript(state[MESSAGES_KEY], transcript)
        self._store(scope, key, _Entry(raw, state, StoredMessages(), encoder))
        return state

    def history_for(self, records: Sequence[dict[str, Any]], agent_name: str | None) -> WorkingHistory:
        """The stored records as core messages for one run, built once per record while the state is cached.

        `agent_name` is the conversation's agent, whose name its assistant records imply.
        """
        with self._lock:
            entry = self._by_records.get(id(records))
        if entry is None or entry.state.get(MESSAGES_KEY) is not records:
            return StoredMessages().history_for(records, agent_name)  # not cached: built for this run only
        return entry.messages.history_for(records, agent_name)

    def encode(self, scope: str, key: str, state: dict[str, Any]) -> str:
        """The JSON text of `state`, reusing the text of records this conversation stored before
        (`FragmentEncoder.encode`)."""
        with self._lock:
            entry = self._entries.get((scope, key))
        return (entry.encoder if entry is not None else FragmentEncoder()).encode(state)

    def remember(self, scope: str, key: str, state: dict[str, Any], text: str) -> None:
        """Record that this process wrote `text` (the encoding of `state`) for the conversation.

        What was built from records the new state shares with the previous one is carried over, except messages
        the last run may have changed without them being checked: those are rebuilt when next needed.
        """
        with self._lock:
            previous = self._entries.get((scope, key))
        if previous is None:
            messages, encoder = StoredMessages(), FragmentEncoder()
        else:
            messages, encoder = previous.messages.carried_to(state.get(MESSAGES_KEY) or []), previous.encoder
            encoder.forget_other_than(state)
        self._store(scope, key, _Entry(text, state, messages, encoder))

    def clear(self) -> None:
        """Drop everything, as a fresh process would start."""
        with self._lock:
            self._entries.clear()
            self._by_records.clear()
            self._bytes = 0

    def _store(self, scope: str, key: str, entry: _Entry) -> None:
        with self._lock:
            self._drop((scope, key))
            if entry.estimated_bytes > self.max_bytes:
                return
            self._entries[(scope, key)] = entry
            records = entry.state.get(MESSAGES_KEY)
            if records is not None:
                self._by_records[id(records)] = entry
            self._bytes += entry.estimated_bytes
            self._shrink()

    def _shrink(self) -> None:
        while self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def _drop(self, cache_key: tuple[str, str]) -> None:
        entry = self._entries.pop(cache_key, None)
        if entry is None:
            return
        self._bytes -= entry.estimated_bytes
        records = entry.state.get(MESSAGES_KEY)
        if records is not None and self._by_records.get(id(records)) is entry:
            del self._by_records[id(records)]


CONVERSATION_CACHE = ConversationCache()
"""The process's cache, shared by every conversation entity of every app in it."""
