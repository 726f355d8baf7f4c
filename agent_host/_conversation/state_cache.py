"""Reuse of decoded conversations: skip the work when the host hands back exactly the string this process wrote.

A warm worker usually receives, for its next operation, the very state string it committed last. Decoding it
again, rebuilding every core `Message` and re-encoding every unchanged message would cost several times the JSON
floor. This cache keeps, per conversation, the last string seen, its decoded state, and per stored record the
core message built from it and its JSON text. A hit is verified by string equality, so state written by anyone
else (another worker, an older version, a hand edit) is decoded and validated as usual.

Rules that keep reuse invisible:

- Decoded states and their records are read-only values: an operation builds its new state aside (as the entity
  must anyway, because the host does not roll back in-place changes), and a changed message gets a new record.
- The cached messages are lent to a run and checked when it ends: a message whose id, role, author, contents or
  annotations changed gets a new record (and is rebuilt for the next run); a message the run may have changed
  but that was never checked (the run failed, or the message left the buffer) is rebuilt too.
- Contents are values: code that edits a `Content` object in place instead of replacing it is not detected.
"""

from __future__ import annotations

import copy
import json
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from agent_framework import Content, Message

from .._records import record_author, record_to_message
from .state import MESSAGES_KEY, TURNS_KEY, decode_state

DEFAULT_MAX_CONVERSATIONS = 64
DEFAULT_MAX_CHARS = 64 * 1024 * 1024
# How many records no longer stored may stay known before a conversation's maps are rebuilt.
_STALE_SLACK = 256
_NO_PROPS: dict[str, Any] = {}


def _json_encoder() -> Callable[[Any], str]:
    """A fresh encoder producing exactly `json.dumps(value, separators=(",", ":"), ensure_ascii=False)`.

    Made once per state and reused for each of its records, it saves `json.dumps`'s set-up per record.
    """
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    if c_make_encoder is None:  # pragma: no cover - Python builds without the C accelerator
        return encoder.encode
    # The arguments `JSONEncoder.iterencode` passes for these settings (circular check on, NaN allowed).
    chunks = c_make_encoder({}, encoder.default, encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(chunks(value, 0))


class _Known:
    """What is known about one stored record: its message (None until a run needs it) and its JSON text."""

    __slots__ = ("fragment", "message", "props", "record", "signature")

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.message: Message | None = None
        self.signature: tuple[Any, ...] = ()
        self.props: dict[str, Any] = _NO_PROPS
        self.fragment: str | None = None

    def build_message(self, agent_name: str | None) -> Message:
        message = _TEXT_MESSAGES.build(self.record, agent_name) or record_to_message(self.record, agent_name)
        self.message = message
        self.signature = _signature(message)
        # A snapshot of the annotations as built, to tell afterwards whether a run changed them in place.
        self.props = copy.deepcopy(message.additional_properties) if message.additional_properties else _NO_PROPS
        return message


class _TextMessageFactory:
    """Builds the message of a plain-text record in a fraction of core's general constructors' time.

    Restoring a cold conversation builds one message per stored record, and `Message(...)` parses its contents
    generically. A plain-text record (id, role, text, optional author) needs none of that: the message is made
    from attribute templates taken from `record_to_message` itself. On first use the factory checks that its
    messages are attribute-for-attribute what `record_to_message` builds; if core ever differs, it stays off.
    """

    _PLAIN_KEYS = frozenset({"id", "role", "text", "author", "at"})

    def __init__(self) -> None:
        self._checked = False
        self._enabled = False
        self._message_template: dict[str, Any] = {}
        self._content_template: dict[str, Any] = {}
        self._fresh: tuple[tuple[str, type], ...] = ()

    def build(self, record: dict[str, Any], agent_name: str | None) -> Message | None:
        """The record's message, or None when the record is not plain text (or the factory is off)."""
        if not self._checked:
            self._check()
        if not self._enabled or not isinstance(record.get("text"), str) or not record.keys() <= self._PLAIN_KEYS:
            return None
        fields = dict(self._content_template)
        for name, kind in self._fresh:
            fields[name] = kind()
        fields["text"] = record["text"]
        content = Content.__new__(Content)
        content.__dict__ = fields
        message = Message.__new__(Message)
        message.__dict__ = {
            **self._message_template,
            "role": record["role"],
            "contents": [content],
            "author_name": record_author(record, agent_name),
            "message_id": record["id"],
            "additional_properties": {},
        }
        return message

    def _check(self) -> None:
        self._checked = True
        probe = record_to_message({"id": "probe", "role": "user", "text": "probe", "at": 0}, None)
        self._message_template = dict(probe.__dict__)
        self._content_template = dict(probe.contents[0].__dict__) if len(probe.contents) == 1 else {}
        # Each message gets its own mutable defaults (e.g. `additional_properties`), never the template's.
        self._fresh = tuple(
            (name, type(value))
            for name, value in self._content_template.items()
            if isinstance(value, dict | list | set) and not value
        )
        self._enabled = bool(self._content_template)
        samples = (
            {"id": "a.in", "role": "user", "text": "Hello there", "at": 1},
            {"id": "a.0", "role": "assistant", "text": "", "author": "helper", "at": 2},
            {"id": "a.1", "role": "assistant", "text": "Hi", "at": 3},
        )
        self._enabled = self._enabled and all(
            _same_message(self.build(r, "agent"), record_to_message(r, "agent")) for r in samples
        )


def _same_message(fast: Message | None, slow: Message) -> bool:
    if fast is None or type(fast) is not type(slow) or len(fast.contents) != len(slow.contents):
        return False
    fast_fields = {k: v for k, v in fast.__dict__.items() if k != "contents"}
    slow_fields = {k: v for k, v in slow.__dict__.items() if k != "contents"}
    return fast_fields == slow_fields and all(
        type(a) is type(b) and a.__dict__ == b.__dict__ for a, b in zip(fast.contents, slow.contents, strict=True)
    )


_TEXT_MESSAGES = _TextMessageFactory()


class _Entry:
    """One conversation's last string, its state, and what is known about each record (by record identity)."""

    __slots__ = ("by_message", "by_record", "encoded_messages", "state", "text", "turn_fragments", "working")

    def __init__(self, text: str, state: dict[str, Any]) -> None:
        self.text = text
        self.state = state
        self.by_record: dict[int, _Known] = {}
        self.by_message: dict[int, _Known] = {}
        # id(turn record) -> (the record, its JSON text): the hundred kept turn records rarely change.
        self.turn_fragments: dict[int, tuple[dict[str, Any], str]] = {}
        # The last messages list encoded and its JSON items: a transcript usually only grows at the end.
        self.encoded_messages: tuple[list[dict[str, Any]], str] = ([], "")
        self.working: WorkingHistory | None = None


class WorkingHistory:
    """One run's view of the stored transcript as core messages, and the way back to unchanged records.

    Attributes:
        messages: One message per stored record, in stored order, for the run's history buffer (a list the run
            may change; the cache keeps its own).
    """

    def __init__(self, records: Sequence[dict[str, Any]], lent: list[Message], by_message: dict[int, _Known]) -> None:
        self.messages = list(lent)
        self.records = records
        self.lent = lent
        self.unchanged: set[int] = set()
        self._by_message = by_message

    @property
    def all_unchanged(self) -> bool:
        """Whether every lent message was confirmed unchanged (each record is lent once per run)."""
        return len(self.unchanged) == len(self.lent)

    def record_for(self, message: Message) -> dict[str, Any] | None:
        """The stored record `message` came from, if the run left the message unchanged; otherwise None."""
        known = self._by_message.get(id(message))
        if known is None or known.message is not message:
            return None
        # Tuple equality tries identity first, so unchanged contents compare without calling Content.__eq__.
        if (
            known.signature != (message.message_id, message.role, message.author_name, *message.contents)
            or message.additional_properties != known.props
        ):
            return None
        self.unchanged.add(id(known.record))
        return known.record


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
        state = decode_state(raw)
        self._store(scope, key, _Entry(raw, state))
        return state

    def history_for(self, records: Sequence[dict[str, Any]], agent_name: str | None) -> WorkingHistory:
        """The stored records as core messages for one run, built once per record while the state is cached.

        `agent_name` is the conversation's agent, whose name its assistant records imply.
        """
        with self._lock:
            entry = self._by_records.get(id(records))
        if entry is None or entry.state.get(MESSAGES_KEY) is not records:
            entry = _Entry("", {MESSAGES_KEY: records})  # not cached: a throwaway view
        lent: list[Message]
        last = entry.working
        if last is not None and not last.all_unchanged:
            # The last run on this state ended without a commit (it raised): what it was lent cannot be trusted.
            _forget_unchecked(entry.by_message, last)
            last = None
        if (
            last is not None
            and last.all_unchanged
            and len(records) >= len(last.records)
            and all(map(operator.is_, last.records, records))
        ):
            # The transcript only grew since the last run, which changed none of its messages: reuse the list.
            lent = [*last.lent, *_messages_of(entry, records[len(last.records) :], agent_name)]
        else:
            lent = _messages_of(entry, records, agent_name)
        entry.working = WorkingHistory(records, lent, entry.by_message)
        return entry.working

    def encode(self, scope: str, key: str, state: dict[str, Any]) -> str:
        """Exactly `encode_state(state)`, reusing the JSON text of records this conversation stored before."""
        with self._lock:
            entry = self._entries.get((scope, key))
        if entry is None:
            entry = _Entry("", state)  # not cached: a throwaway view
        to_json = _json_encoder()
        # One join at the end: the state can be a megabyte, and every intermediate string would copy it again.
        parts: list[str] = []
        for name, value in state.items():
            parts += ("," if parts else "{", encode_basestring(name), ":")
            if name == MESSAGES_KEY and isinstance(value, list):
                parts += ("[", _message_items(entry, value, to_json), "]")
            elif name == TURNS_KEY and isinstance(value, dict):
                parts += ("{", ",".join(_turn_fragments(entry.turn_fragments, value, to_json)), "}")
            else:
                parts.append(to_json(value))
        parts.append("}" if parts else "{}")
        return "".join(parts)

    def remember(self, scope: str, key: str, state: dict[str, Any], text: str) -> None:
        """Record that this process wrote `text` (the encoding of `state`) for the conversation.

        What is known about records the new state shares with the previous one is carried over, except messages
        the last run may have changed without them being checked: those are rebuilt when next needed.
        """
        with self._lock:
            previous = self._entries.get((scope, key))
        entry = _Entry(text, state)
        if previous is not None:
            entry.by_record, entry.by_message = _carried(previous, state.get(MESSAGES_KEY) or [])
            entry.encoded_messages = previous.encoded_messages
            if previous.working is not None and previous.working.all_unchanged:
                entry.working = previous.working
            turns = state.get(TURNS_KEY) or {}
            entry.turn_fragments = previous.turn_fragments
            if len(entry.turn_fragments) > len(turns) + _STALE_SLACK:
                entry.turn_fragments = {
                    id(record): entry.turn_fragments[id(record)]
                    for record in turns.values()
                    if id(record) in entry.turn_fragments
                }
        self._store(scope, key, entry)

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


def _messages_of(entry: _Entry, records: Sequence[dict[str, Any]], agent_name: str | None) -> list[Message]:
    """The cached message of each record, built for records that have none yet."""
    by_record, by_message = entry.by_record, entry.by_message
    messages: list[Message] = []
    for record in records:
        known = by_record.get(id(record))
        if known is None or known.record is not record:
            known = by_record[id(record)] = _Known(record)
        message = known.message
        if message is None:
            message = known.build_message(agent_name)
            by_message[id(message)] = known
        messages.append(message)
    return messages


def _message_items(entry: _Entry, records: list[dict[str, Any]], to_json: Callable[[Any], str]) -> str:
    """The comma-separated JSON of `records`, reusing the last encoded list when `records` only extends it."""
    before, items = entry.encoded_messages
    if before and len(records) >= len(before) and all(map(operator.is_, before, records)):
        tail = _message_fragments(entry.by_record, records[len(before) :], to_json)
        items = ",".join([items, *tail]) if tail else items
    else:
        items = ",".join(_message_fragments(entry.by_record, records, to_json))
    entry.encoded_messages = (records, items)
    return items


def _message_fragments(
    by_record: dict[int, _Known], records: list[dict[str, Any]], to_json: Callable[[Any], str]
) -> list[str]:
    fragments: list[str] = []
    for record in records:
        known = by_record.get(id(record))
        if known is None or known.record is not record:
            known = by_record[id(record)] = _Known(record)
        if known.fragment is None:
            known.fragment = to_json(record)
        fragments.append(known.fragment)
    return fragments


def _turn_fragments(
    known: dict[int, tuple[dict[str, Any], str]], turns: dict[str, Any], to_json: Callable[[Any], str]
) -> list[str]:
    fragments: list[str] = []
    for turn_id, record in turns.items():
        cached = known.get(id(record))
        if cached is None or cached[0] is not record:
            cached = known[id(record)] = (record, to_json(record))
        fragments.append(encode_basestring(turn_id) + ":" + cached[1])
    return fragments


def _carried(previous: _Entry, records: list[dict[str, Any]]) -> tuple[dict[int, _Known], dict[int, _Known]]:
    """The record and message maps the next state inherits from the previous one."""
    by_record, by_message = previous.by_record, previous.by_message
    if previous.working is not None and not previous.working.all_unchanged:
        _forget_unchecked(by_message, previous.working)
    if len(by_record) > len(records) + _STALE_SLACK:
        by_record = {id(record): by_record[id(record)] for record in records if id(record) in by_record}
        by_message = {id(known.message): known for known in by_record.values() if known.message is not None}
    return by_record, by_message


def _forget_unchecked(by_message: dict[int, _Known], working: WorkingHistory) -> None:
    """Drop the messages a run was lent and did not confirm unchanged; their records and JSON text stand."""
    for message in working.lent:
        known = by_message.get(id(message))
        if known is not None and known.message is message and id(known.record) not in working.unchanged:
            del by_message[id(message)]
            known.message = None


def _signature(message: Message) -> tuple[Any, ...]:
    return (message.message_id, message.role, message.author_name, *message.contents)


CONVERSATION_CACHE = ConversationCache()
"""The process's cache, shared by every conversation entity of every app in it."""
