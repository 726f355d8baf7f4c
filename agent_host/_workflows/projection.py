"""Workflow context projection (L3): what an agent node is given of the upstream conversation, and what it has seen.

An agent node's input is the upstream `full_conversation` projected by the node's `context_mode` (L3-2); its
outgoing conversation is that selected input plus its own reply (L3-3). Every message travelling between nodes
carries a transport identity, a `MessageKey`: who first put it in the workflow (its producer), that producer's
occurrence number, and a fingerprint of the whole message (L3-5). Application `message_id`s are never rewritten.
`DeliveryLedger` records exactly which keys each node has been given, per producer (L3-4, L3-6), so a node is sent only
what it has not seen: a cycle does not re-send the conversation (architecture.md, failure 17), and a non-monotonic
`custom` filter loses nothing. Pure functions of their inputs: the orchestrator rebuilds all of it on replay.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_framework import Message

ContextMode = Literal["full", "last_agent", "custom"]
ContextFilter = Callable[[list[Message]], list[Message]]


@dataclass(frozen=True, order=True)
class MessageKey:
    """The transport identity of one revision of one message in a workflow run.

    Attributes:
        producer: The executor (or, for the run's input, the start executor's input) that first carried it.
        occurrence: That producer's number for it, counted from 0 in the order it produced messages.
        revision: A fingerprint of the whole message (roles, every content, ids and metadata included).
    """

    producer: str
    occurrence: int
    revision: str

    def to_json(self) -> list[Any]:
        """The key as JSON (`[producer, occurrence, revision]`)."""
        return [self.producer, self.occurrence, self.revision]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> MessageKey:
        """A key from its JSON form."""
        producer, occurrence, revision = data
        return cls(str(producer), int(occurrence), str(revision))


@dataclass(frozen=True)
class Carried:
    """A message as it travels between executors: the core message and its transport identity."""

    message: Message
    key: MessageKey


def fingerprint(message: Message) -> str:
    """A fingerprint of the whole message: any change to its role, contents, ids or metadata changes it."""
    text = json.dumps(message.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass
class Occurrences:
    """Numbers each producer's messages in the order the run produced them; replay numbers them the same."""

    counts: dict[str, int] = field(default_factory=dict)

    def mint(self, producer: str, message: Message) -> Carried:
        """A new occurrence of `message`, produced by `producer`."""
        number = self.counts.get(producer, 0)
        self.counts[producer] = number + 1
        return Carried(message, MessageKey(producer, number, fingerprint(message)))


def revised(carried: Carried) -> Carried:
    """The same occurrence, re-fingerprinted: a message changed in place is a new revision of it."""
    revision = fingerprint(carried.message)
    if revision == carried.key.revision:
        return carried
    key = carried.key
    return Carried(carried.message, MessageKey(key.producer, key.occurrence, revision))


def project(
    mode: ContextMode,
    context_filter: ContextFilter | None,
    full_conversation: Sequence[Carried],
    agent_messages: Sequence[Carried],
    *,
    minted_by: str,
    occurrences: Occurrences,
) -> list[Carried]:
    """The part of an upstream `AgentExecutorResponse` an agent node takes, in order (L3-2).

    `full` takes the whole `full_conversation`, `last_agent` the upstream agent's reply, `custom` what
    `context_filter` returns for the full conversation. A message the filter returns that is not one of those it was
    given (a summary it wrote, say) becomes a new occurrence produced by `minted_by`.

    Raises:
        TypeError: the filter returned something other than a list of `Message`s.
    """
    if mode == "full":
        return list(full_conversation)
    if mode == "last_agent":
        return list(agent_messages)
    if context_filter is None:
        raise ValueError("context_mode 'custom' needs a context_filter")
    offered = list(full_conversation)
    returned = context_filter([carried.message for carried in offered])
    if not isinstance(returned, list) or not all(isinstance(item, Message) for item in returned):
        raise TypeError(
            f"context_filter must return a list of Message, got {type(returned).__name__}: it runs in the orchestrator "
            "and must be synchronous and deterministic (docs/workflows.md, L3-8)."
        )
    return identify(returned, offered, minted_by=minted_by, occurrences=occurrences)


def identify(
    returned: Iterable[Message], offered: Sequence[Carried], *, minted_by: str, occurrences: Occurrences
) -> list[Carried]:
    """Give each returned message the identity of the offered message it is.

    The same object keeps its occurrence (re-fingerprinted, in case it was changed); an equal copy takes the first
    unused offered occurrence with the same fingerprint; anything else is a new occurrence produced by `minted_by`.
    """
    by_object = {id(carried.message): carried for carried in offered}
    unused: dict[str, list[Carried]] = {}
    for carried in offered:
        unused.setdefault(carried.key.revision, []).append(carried)
    result: list[Carried] = []
    for message in returned:
        same = by_object.get(id(message))
        if same is not None:
            result.append(revised(same))
            continue
        candidates = unused.get(fingerprint(message))
        if candidates:
            original = candidates.pop(0)
            result.append(Carried(message, original.key))
            continue
        result.append(occurrences.mint(minted_by, message))
    return result


@dataclass
class DeliveryLedger:
    """Exact delivery receipts: which message revisions each agent node has been given, per producer (L3-4, L3-6).

    Sets, not a high-water mark, so a `custom` filter that selects `[1, 3]` and later `[2, 4]` delivers 2 and 4.
    A node's own replies count as seen: they are already in its conversation. Receipts live in the orchestrator and
    are rebuilt by replay, so retention evicting messages from a node's conversation never makes them look new.
    """

    seen: dict[str, dict[str, set[tuple[int, str]]]] = field(default_factory=dict)

    def has_seen(self, target: str, key: MessageKey) -> bool:
        """Whether `target` was given this revision of this occurrence."""
        return (key.occurrence, key.revision) in self.seen.get(target, {}).get(key.producer, ())

    def unseen(self, target: str, messages: Iterable[Carried]) -> list[Carried]:
        """The messages `target` has not been given, in order, each once."""
        delta: list[Carried] = []
        batch: set[MessageKey] = set()
        for carried in messages:
            if carried.key in batch or self.has_seen(target, carried.key):
                continue
            batch.add(carried.key)
            delta.append(carried)
        return delta

    def record(self, target: str, messages: Iterable[Carried]) -> None:
        """Note that `target` now has these messages."""
        by_producer = self.seen.setdefault(target, {})
        for carried in messages:
            by_producer.setdefault(carried.key.producer, set()).add((carried.key.occurrence, carried.key.revision))

    def count(self, target: str) -> int:
        """How many message revisions `target` has been given."""
        return sum(len(keys) for keys in self.seen.get(target, {}).values())
