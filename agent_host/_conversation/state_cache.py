"""Reuse of decoded conversations: skip decoding when the host hands back exactly the string this process wrote.

A warm worker usually receives, for its next operation, the very state string it committed last. This cache keeps,
per conversation, the last string seen and its decoded state, with what was built from it: the core messages of
its records (`message_reuse`) and their JSON text (`fragment_encoder`). A hit is verified by string equality, so
state written by anyone else (another worker, an older version, a hand edit) is decoded and validated as usual.
What it buys (`python -m bench --parts`, two runs): a cold turn costs 1.4-1.6x a warm one at 200 and at 2,000
stored messages.

Decoded states and their records are read-only values: an operation builds its new state aside (as the entity must
anyway, because the host does not roll back in-place changes), and a changed message gets a new record.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from .fragment_encoder import FragmentEncoder
from .message_reuse import StoredMessages, WorkingHistory
from .state import MESSAGES_KEY, decode_state_text

DEFAULT_MAX_CONVERSATIONS = 64
DEFAULT_MAX_CHARS = 64 * 1024 * 1024


class _Entry:
    """One conversation's last string, its state, and what was built from its records."""

    __slots__ = ("encoder", "messages", "state", "text")

    def __init__(self, text: str, state: dict[str, Any], messages: StoredMessages, encoder: FragmentEncoder) -> None:
        self.text = text
        self.state = state
        self.messages = messages
        self.encoder = encoder


class ConversationCache:
    """The decoded form of the last state string each conversation had in this process, bounded (LRU).

    Args:
        max_conversations: How many conversations to keep.
        max_chars: How many characters of state text to keep in all (the decoded form is several times larger).
    """

    def __init__(self, max_conversations: int = DEFAULT_MAX_CONVERSATIONS, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.max_conversations = max_conversations
        self.max_chars = max_chars
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._by_records: dict[int, _Entry] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

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
            self._chars = 0

    def _store(self, scope: str, key: str, entry: _Entry) -> None:
        with self._lock:
            self._drop((scope, key))
            if len(entry.text) > self.max_chars:
                return
            self._entries[(scope, key)] = entry
            records = entry.state.get(MESSAGES_KEY)
            if records is not None:
                self._by_records[id(records)] = entry
            self._chars += len(entry.text)
            while len(self._entries) > self.max_conversations or self._chars > self.max_chars:
                self._drop(next(iter(self._entries)))

    def _drop(self, cache_key: tuple[str, str]) -> None:
        entry = self._entries.pop(cache_key, None)
        if entry is None:
            return
        self._chars -= len(entry.text)
        records = entry.state.get(MESSAGES_KEY)
        if records is not None and self._by_records.get(id(records)) is entry:
            del self._by_records[id(records)]


CONVERSATION_CACHE = ConversationCache()
"""The process's cache, shared by every conversation entity of every app in it."""
