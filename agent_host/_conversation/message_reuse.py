"""Reuse of the core messages built from a conversation's stored records, and the way back to unchanged records.

Every run needs the whole transcript as core `Message`s. Building one per stored record costs more than decoding
it, so a process keeps, per record, the message it built and lends the same messages to the next run; after the
run, a message it left unchanged maps back to its record, which is then neither rebuilt nor encoded again.
What it buys (`python -m bench --parts`, two runs): without it a warm turn costs 1.3x at 200 stored messages and
1.5x at 2,000.

Rules that keep reuse invisible:

- The cached messages are lent to a run and checked when it ends: a message whose id, role, author, contents or
  annotations changed gets a new record (and is rebuilt for the next run); a message the run may have changed
  but that was never checked (the run failed, or the message left the buffer) is rebuilt too.
- Contents are values: code that edits a `Content` object in place instead of replacing it is not detected.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Sequence
from typing import Any

from agent_framework import Content, Message

from .._records import record_author, record_to_message

# How many records no longer stored may stay known before a conversation's maps are rebuilt.
_STALE_SLACK = 256
_NO_PROPS: dict[str, Any] = {}


class _Known:
    """What is known about one stored record: the message built from it (None until a run needs one)."""

    __slots__ = ("message", "props", "record", "signature")

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.message: Message | None = None
        self.signature: tuple[Any, ...] = ()
        self.props: dict[str, Any] = _NO_PROPS

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
    Without it a turn costs 1.1-1.2x at 200 stored messages and 1.15-1.5x at 2,000, cold or warm
    (`python -m bench --parts`, two runs).
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
        text = record.get("text")
        if not self._enabled or type(text) is not str or not record.keys() <= self._PLAIN_KEYS:
            return None
        # Filled key by key: 2,000 messages cost 5.0 ms this way, 6.5 ms with `dict(template, **fields)`.
        content_fields = self._content_template.copy()
        content_fields["text"] = text
        for name, kind in self._fresh:
            content_fields[name] = kind()
        content = Content.__new__(Content)
        content.__dict__ = content_fields
        message_fields = self._message_template.copy()
        message_fields["role"] = record["role"]
        message_fields["contents"] = [content]
        message_fields["author_name"] = record_author(record, agent_name)
        message_fields["message_id"] = record["id"]
        message_fields["additional_properties"] = {}
        message = Message.__new__(Message)
        message.__dict__ = message_fields
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


class StoredMessages:
    """The messages built from one conversation's records, and the last history lent to a run."""

    def __init__(self) -> None:
        self._by_record: dict[int, _Known] = {}
        self._by_message: dict[int, _Known] = {}
        self._working: WorkingHistory | None = None

    def history_for(self, records: Sequence[dict[str, Any]], agent_name: str | None) -> WorkingHistory:
        """The records as core messages for one run, each built once while it stays stored.

        `agent_name` is the conversation's agent, whose name its assistant records imply.
        """
        last = self._working
        if last is not None and not last.all_unchanged:
            # The last run ended without a commit (it raised): what it was lent cannot be trusted.
            self._forget_unchecked(last)
            last = None
        if last is not None and len(records) >= len(last.records) and all(map(operator.is_, last.records, records)):
            # The transcript only grew since the last run, which changed none of its messages: reuse the list.
            lent = [*last.lent, *self._messages_of(records[len(last.records) :], agent_name)]
        else:
            lent = self._messages_of(records, agent_name)
        self._working = WorkingHistory(records, lent, self._by_message)
        return self._working

    def carried_to(self, records: Sequence[dict[str, Any]]) -> StoredMessages:
        """What the conversation's next state (holding `records`) keeps: messages the last run may have changed
        without them being checked are dropped, to be rebuilt when next needed."""
        carried = StoredMessages()
        last = self._working
        if last is not None and not last.all_unchanged:
            self._forget_unchecked(last)
        else:
            carried._working = last
        carried._by_record, carried._by_message = self._by_record, self._by_message
        if len(self._by_record) > len(records) + _STALE_SLACK:
            carried._by_record = {id(r): self._by_record[id(r)] for r in records if id(r) in self._by_record}
            carried._by_message = {
                id(known.message): known for known in carried._by_record.values() if known.message is not None
            }
        return carried

    def _messages_of(self, records: Sequence[dict[str, Any]], agent_name: str | None) -> list[Message]:
        """The known message of each record, built for records that have none yet."""
        by_record, by_message = self._by_record, self._by_message
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

    def _forget_unchecked(self, working: WorkingHistory) -> None:
        """Drop the messages a run was lent and did not confirm unchanged; their records stand."""
        for message in working.lent:
            known = self._by_message.get(id(message))
            if known is not None and known.message is message and id(known.record) not in working.unchanged:
                del self._by_message[id(message)]
                known.message = None


def _signature(message: Message) -> tuple[Any, ...]:
    return (message.message_id, message.role, message.author_name, *message.contents)
