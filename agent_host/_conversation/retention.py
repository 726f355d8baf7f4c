"""Retention: how much one conversation may store, and what may be deleted to stay under it.

Each mode is a strategy, as core's compaction strategies are, chosen once per decision from the conversation's
settings (`strategy_for`); the host calls `make_room` before a turn's model runs and the strategy after a completed
turn:

- `KeepAllStrategy` (``keep_all``) never deletes messages; a turn that would take the state over its budget is
  refused before the model runs.
- `AutoStrategy` (``auto``) deletes only under pressure: once the stored state reaches the high watermark it brings
  it down to the low watermark, first dropping the answer copies old turn receipts keep, then evicting message
  groups: first those a stored compaction summary stands for (the model is sent the summary, not them), then the
  oldest.
- `FollowCompactionStrategy` (``follow_compaction``) first deletes what compaction excluded, then applies the same
  pressure eviction.

The budget covers the whole state. Turn receipts get at most `RECEIPT_SHARE` of it in every mode; past that the
oldest receipts go (their turns answer 410). Everything is measured on the exact bytes the entity stores
(`encode_state`), encoded once for each state a decision makes (`EncodedState`). Core's message grouping decides
what goes together, so a tool call and its results are evicted together or not at all, and a summary never leaves
before the messages it stands for: a message stays excluded only by a summary that is stored. System messages and
the newest exchange (with the answer being delivered) are never evicted (architecture.md, failures 6, 7, 8, 14 and
18). The functions here are pure: they take the JSON-shaped state and return a new one, leaving the input unchanged."""

from __future__ import annotations

import copy
import json
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from agent_framework import (
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    CharacterEstimatorTokenizer,
)

from .._deps.agent_framework_private import group_messages
from .._errors import StateCapacityExceededError
from .._records import record_to_message
from .._retention_settings import AUTO, FOLLOW_COMPACTION, KEEP_ALL, RetentionModeName, RetentionSettings
from .state import (
    CAPACITY_ERROR_KEY,
    CONVERSATION_ID_KEY,
    EXPIRED_TURNS_KEY,
    MESSAGES_KEY,
    RETENTION_KEY,
    TRUNCATION_KEY,
    TURNS_KEY,
    UPDATED_AT_KEY,
    StoredState,
    encode_state,
)
from .turn_receipts import expire_turns, holds_copies, named_messages

logger = logging.getLogger("agent_host.retention")

# Turn receipts (records and the ids of expired turns) may take at most this share of a conversation's budget.
RECEIPT_SHARE = 0.2
EVICTED_MESSAGES_KEY = "evictedMessages"
EXPIRED_ANSWERS_KEY = "expiredAnswers"
FIRST_EVICTED_AT_KEY = "firstEvictedAt"
LAST_EVICTED_AT_KEY = "lastEvictedAt"
PROPS_KEY = "props"
_TOKENIZER = CharacterEstimatorTokenizer()


@dataclass(frozen=True)
class TokenBudget:
    """A byte allowance expressed in core's token units, calibrated on persisted bytes (architecture.md, failure 6).

    Core's compaction counts tokens (about four characters each); retention must stay under bytes. The ratio
    comes from the stored JSON of the evictable messages, never from their text: a tool-only history has
    little text and many bytes, and a text-calibrated budget would evict all of it.

    Attributes:
        tokens: The allowance in tokens.
        bytes_per_token: Persisted bytes per token of the messages the budget was calibrated on.
    """

    tokens: float
    bytes_per_token: float

    @classmethod
    def calibrated(cls, allowed_bytes: int, persisted: Sequence[str]) -> TokenBudget:
        """The token budget worth `allowed_bytes`, calibrated on the persisted JSON of the evictable messages."""
        persisted_bytes = sum(_utf8_len(text) + 1 for text in persisted)
        tokens = sum(_TOKENIZER.count_tokens(text) for text in persisted)
        bytes_per_token = persisted_bytes / tokens if tokens else 4.0
        return cls(max(allowed_bytes, 0) / bytes_per_token, bytes_per_token)

    def tokens_for(self, size: int) -> float:
        """`size` persisted bytes in this budget's tokens."""
        return size / self.bytes_per_token


@dataclass(frozen=True)
class EncodedState:
    """A state with its exact encoding and stored size, so that no check of one decision encodes it again.

    Attributes:
        state: The JSON-shaped state.
        text: `encode_state(state)`, the string the entity stores.
        size: The stored size in UTF-8 bytes.
        known_costs: Turn receipts' stored bytes measured for the state this one was derived from.
    """

    state: StoredState
    text: str
    size: int
    known_costs: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, state: StoredState, text: str | None = None) -> EncodedState:
        """`state` encoded once (`text` is its encoding, when the caller has it already)."""
        text = encode_state(state) if text is None else text
        return cls(state, text, _utf8_len(text))

    def derived(self, state: StoredState) -> EncodedState:
        """This state when `state` is this one's object, else `state` encoded once.

        `state` is one this decision made from this one: its turn records are this one's, already measured.
        """
        if state is self.state:
            return self
        text = encode_state(state)
        return EncodedState(state, text, _utf8_len(text), self.__dict__.get("receipt_costs", self.known_costs))

    @cached_property
    def receipt_costs(self) -> dict[str, int]:
        """Each turn record's stored bytes (its id, record and separators), oldest first."""
        known = self.known_costs
        return {
            turn_id: known[turn_id] if turn_id in known else _receipt_cost(turn_id, record)
            for turn_id, record in self.state.get(TURNS_KEY, {}).items()
        }

    @property
    def receipt_bytes(self) -> int:
        """The stored bytes of the turn receipts: the records with their braces and commas, and the expired turns'
        ids."""
        costs = self.receipt_costs
        records = 1 + sum(costs.values()) if costs else 2
        return records + _utf8_len(encode_state(self.state.get(EXPIRED_TURNS_KEY, [])))


@dataclass(frozen=True)
class RetentionOutcome:
    """What a retention decision (or one step of it) did to a conversation's state.

    Attributes:
        current: The state to commit (the input object itself when nothing changed), encoded.
        evicted_ids: Ids of the messages deleted under pressure, oldest first.
        followed_ids: Ids of the messages deleted because compaction excluded them (`follow_compaction`).
        expired_turns: Ids of the turns whose answers retention dropped (they answer 410).
        protected_bytes: The bytes pressure eviction may not free, when it measured them.
    """

    current: EncodedState
    evicted_ids: tuple[str, ...] = ()
    followed_ids: tuple[str, ...] = ()
    expired_turns: tuple[str, ...] = ()
    protected_bytes: int | None = None

    @property
    def state(self) -> StoredState:
        """The state to commit."""
        return self.current.state

    @property
    def text(self) -> str:
        """Its exact encoding, the string the entity stores."""
        return self.current.text

    @property
    def state_bytes(self) -> int:
        """The stored size in UTF-8 bytes."""
        return self.current.size

    def then(self, later: RetentionOutcome) -> RetentionOutcome:
        """This step followed by `later`, which started from this step's state."""
        return RetentionOutcome(
            later.current,
            self.evicted_ids + later.evicted_ids,
            self.followed_ids + later.followed_ids,
            self.expired_turns + later.expired_turns,
            self.protected_bytes if later.protected_bytes is None else later.protected_bytes,
        )


@dataclass(frozen=True)
class ReceiptPolicy:
    """What retention may do with turn receipts: how many expired ids to remember, which turn to keep whole."""

    max_records: int
    protected_turn: str | None = None


class RetentionStrategy(ABC):
    """A retention mode: what one conversation may delete to stay within its budget.

    The host calls `make_room` before a turn's model runs and the strategy itself after a completed turn, as core
    calls a compaction strategy on its messages. Every mode holds turn receipts to their share of the budget.

    Args:
        settings: The conversation's retention settings (budget and watermarks).
    """

    mode: ClassVar[RetentionModeName]

    def __init__(self, settings: RetentionSettings) -> None:
        self.settings = settings

    def make_room(
        self, state: StoredState, incoming: dict[str, Any], receipts: ReceiptPolicy, stored_bytes: int | None
    ) -> StoredState:
        """The state a turn may run on, given the stored record of its input message (`incoming`).

        `stored_bytes` is the size of `state` as stored, when the caller already has it.

        Raises:
            StateCapacityExceededError: the mode refuses turns that would take the state over its budget.
        """
        return state

    @abstractmethod
    def __call__(self, current: EncodedState, receipts: ReceiptPolicy, now_ms: int) -> RetentionOutcome:
        """Delete what this mode deletes after a completed turn; `now_ms` is the time recorded for evictions."""

    def bound_receipts(self, current: EncodedState, receipts: ReceiptPolicy) -> RetentionOutcome:
        """Turn receipts held to their share of the budget."""
        share = math.floor(self.settings.max_state_bytes * RECEIPT_SHARE)
        # The receipts are part of the state: when the whole state is within their share, so are they, uncounted.
        if current.size <= share or current.receipt_bytes <= share:
            return RetentionOutcome(current)
        trimmed, expired = _trim_receipts(current.state, current.receipt_costs, receipts, current.receipt_bytes - share)
        return RetentionOutcome(current.derived(trimmed), expired_turns=tuple(expired))

    def capacity_error(self, current: EncodedState, protected: int) -> dict[str, str] | None:
        """The `state_capacity_exceeded` error the conversation reports after a completed turn, or None."""
        budget = self.settings.max_state_bytes
        if current.size <= budget:
            return None
        conversation = current.state.get(CONVERSATION_ID_KEY, "?")
        error = StateCapacityExceededError(conversation, current.size, budget, self.mode, protected=protected)
        return error.to_record()


class KeepAllStrategy(RetentionStrategy):
    """`keep_all`: never deletes a message; a turn that would take the state over its budget is refused before the
    model runs. Receipts are trimmed first (answer copies, then the oldest receipts), as under the other modes."""

    mode: ClassVar[RetentionModeName] = KEEP_ALL

    def make_room(
        self, state: StoredState, incoming: dict[str, Any], receipts: ReceiptPolicy, stored_bytes: int | None
    ) -> StoredState:
        """The state, its receipts trimmed when that makes room; the answer's size cannot be known before the model
        runs, so a turn may still end over the budget, and the next one is then refused."""
        budget = self.settings.max_state_bytes
        size = stored_bytes if stored_bytes is not None else state_bytes(state)
        incoming_bytes = _utf8_len(encode_state(incoming)) + 1
        if size + incoming_bytes <= budget:
            return state
        trimmed, _ = _trim_receipts(state, _receipt_costs(state), receipts, size + incoming_bytes - budget)
        size = state_bytes(trimmed)
        if size + incoming_bytes <= budget:
            return trimmed
        conversation = state.get(CONVERSATION_ID_KEY, "?")
        logger.warning(
            "Refused a turn of conversation %s: %d bytes with the message, budget %d (keep_all)",
            conversation,
            size + incoming_bytes,
            budget,
        )
        raise StateCapacityExceededError(conversation, size + incoming_bytes, budget, KEEP_ALL)

    def __call__(self, current: EncodedState, receipts: ReceiptPolicy, now_ms: int) -> RetentionOutcome:
        return self.bound_receipts(current, receipts)

    def bound_receipts(self, current: EncodedState, receipts: ReceiptPolicy) -> RetentionOutcome:
        """Receipts held to their share and, since no message is evicted, to what the budget leaves them."""
        shared = super().bound_receipts(current, receipts)
        if shared.current.size <= self.settings.max_state_bytes:
            return shared
        bounded = shared.current
        trimmed, expired = _trim_receipts(
            bounded.state, bounded.receipt_costs, receipts, bounded.size - self.settings.max_state_bytes
        )
        return shared.then(RetentionOutcome(bounded.derived(trimmed), expired_turns=tuple(expired)))

    def capacity_error(self, current: EncodedState, protected: int) -> dict[str, str] | None:
        """None: a completed turn reports nothing (and clears an earlier refusal); the state may have gone over its
        budget by this answer, and the next turn's refusal reports that with its numbers."""
        return None


class AutoStrategy(RetentionStrategy):
    """`auto`: deletes only under pressure. Once the state reaches the high watermark it is brought down to the low
    one: first the answer copies old receipts keep go, then message groups (`_eviction_steps` order)."""

    mode: ClassVar[RetentionModeName] = AUTO

    def __call__(self, current: EncodedState, receipts: ReceiptPolicy, now_ms: int) -> RetentionOutcome:
        outcome = self.bound_receipts(current, receipts)
        if outcome.state_bytes < math.floor(self.settings.max_state_bytes * self.settings.high_watermark):
            return outcome
        low = math.floor(self.settings.max_state_bytes * self.settings.low_watermark)
        # Answer copies old receipts keep go before any conversation message does.
        copies, gone = _drop_answer_copies(outcome.current, receipts, outcome.state_bytes - low)
        if gone:
            outcome = outcome.then(RetentionOutcome(outcome.current.derived(copies), expired_turns=tuple(gone)))
        if outcome.state_bytes <= low:
            return outcome
        return outcome.then(_evict_under_pressure(outcome.current, self.settings, receipts, now_ms))


class FollowCompactionStrategy(AutoStrategy):
    """`follow_compaction`: first deletes what compaction excluded, then applies `auto`'s pressure eviction."""

    mode: ClassVar[RetentionModeName] = FOLLOW_COMPACTION

    def __call__(self, current: EncodedState, receipts: ReceiptPolicy, now_ms: int) -> RetentionOutcome:
        followed = _compacted_ids(current.state[MESSAGES_KEY]) if current.state.get(MESSAGES_KEY) else []
        if not followed:
            return super().__call__(current, receipts, now_ms)
        new, expired = _without(current.state, set(followed), receipts, now_ms)
        deleted = RetentionOutcome(current.derived(new), followed_ids=tuple(followed), expired_turns=tuple(expired))
        return deleted.then(super().__call__(deleted.current, receipts, now_ms))


_STRATEGIES: dict[RetentionModeName, type[RetentionStrategy]] = {
    strategy.mode: strategy for strategy in (KeepAllStrategy, AutoStrategy, FollowCompactionStrategy)
}


def strategy_for(settings: RetentionSettings) -> RetentionStrategy:
    """The strategy of the settings' mode, holding their budget."""
    return _STRATEGIES[settings.mode](settings)


def apply_retention_settings(state: StoredState, settings: RetentionSettings, now_ms: int) -> StoredState:
    """A copy of `state` with new retention settings; they take effect on the next turn.

    A reported capacity error is dropped when the state now fits the new budget.
    """
    new = copy.copy(state)
    new[RETENTION_KEY] = settings.stored()
    new[UPDATED_AT_KEY] = now_ms
    if CAPACITY_ERROR_KEY in new and state_bytes(new) <= settings.max_state_bytes:
        del new[CAPACITY_ERROR_KEY]
    return new


def state_bytes(state: StoredState) -> int:
    """The size of the state as the entity stores it, in UTF-8 bytes."""
    return _utf8_len(encode_state(state))


def retention_of(state: Mapping[str, Any]) -> RetentionSettings:
    """The conversation's retention settings (the defaults for state written without them)."""
    return RetentionSettings.model_validate(state.get(RETENTION_KEY) or {})


def make_room_for_turn(
    state: StoredState, incoming: dict[str, Any], receipts: ReceiptPolicy, stored_bytes: int | None = None
) -> StoredState:
    """The state a turn may run on: under `keep_all` refused before the model runs when it would go over its budget.

    `incoming` is the stored record of the turn's input message; `stored_bytes` the size of `state` as stored, when
    the caller already has it (`RetentionStrategy.make_room`).

    Raises:
        StateCapacityExceededError: the mode is `keep_all` and the conversation with the input is over the budget.
    """
    return strategy_for(retention_of(state)).make_room(state, incoming, receipts, stored_bytes)


def retain_after_turn(
    state: StoredState, turn: Mapping[str, Any], *, now_ms: int, text: str, receipts: ReceiptPolicy
) -> tuple[StoredState, str]:
    """The state to commit after a turn, and its exact encoding.

    A completed turn is followed by the conversation's retention (`enforce_retention`). A failed turn only adds
    its receipt, which is held to the receipts' share like any other; a turn refused for capacity also leaves the
    conversation reporting why, so a reader of the conversation sees it too.
    """
    if turn["status"] == "completed":
        outcome = enforce_retention(state, now_ms=now_ms, text=text, receipts=receipts)
        return outcome.state, outcome.text
    new = state
    error = turn.get("error") or {}
    if error.get("code") == StateCapacityExceededError.codes[0] and state.get(CAPACITY_ERROR_KEY) != error:
        new = {**state, CAPACITY_ERROR_KEY: dict(error)}
    bounded = strategy_for(retention_of(new)).bound_receipts(
        EncodedState.of(new, text if new is state else None), receipts
    )
    return bounded.state, bounded.text


def enforce_retention(
    state: StoredState, *, now_ms: int, receipts: ReceiptPolicy, text: str | None = None
) -> RetentionOutcome:
    """Apply the conversation's retention after a successful turn.

    Args:
        state: The state about to be committed (with the turn's record); not modified.
        now_ms: The time recorded for evictions.
        receipts: How turn receipts may be trimmed (the turn just run is kept whole).
        text: `encode_state(state)` when the caller has it already, to avoid encoding twice.

    Returns:
        The state to commit and its exact encoding. When even what may not be evicted is over the budget,
        nothing more is evicted and the state carries a `state_capacity_exceeded` error instead.
    """
    strategy = strategy_for(retention_of(state))
    repaired = _reinstate_orphaned_exclusions(state)
    outcome = strategy(EncodedState.of(repaired, text if repaired is state else None), receipts, now_ms)
    protected = outcome.state_bytes if outcome.protected_bytes is None else outcome.protected_bytes
    error = strategy.capacity_error(outcome.current, min(protected, outcome.state_bytes))
    if error != outcome.state.get(CAPACITY_ERROR_KEY):
        new = copy.copy(outcome.state)
        if error is None:
            del new[CAPACITY_ERROR_KEY]
        else:
            new[CAPACITY_ERROR_KEY] = error
        outcome = outcome.then(RetentionOutcome(outcome.current.derived(new)))

    if outcome.followed_ids or outcome.evicted_ids or outcome.expired_turns:
        settings = strategy.settings
        logger.info(
            "Retention (%s) deleted %d compacted and evicted %d messages and dropped %d turn answers of "
            "conversation %s; now %d bytes (budget %d, watermarks %.2f/%.2f)",
            strategy.mode,
            len(outcome.followed_ids),
            len(outcome.evicted_ids),
            len(outcome.expired_turns),
            state.get(CONVERSATION_ID_KEY, "?"),
            outcome.state_bytes,
            settings.max_state_bytes,
            settings.high_watermark,
            settings.low_watermark,
        )
    if error is not None and error != state.get(CAPACITY_ERROR_KEY):
        logger.warning("Conversation %s: %s", state.get(CONVERSATION_ID_KEY, "?"), error["message"])
    return outcome


def _receipt_costs(state: StoredState) -> dict[str, int]:
    """Each turn record's stored bytes (its id, record and separators), oldest first."""
    return {turn_id: _receipt_cost(turn_id, record) for turn_id, record in state.get(TURNS_KEY, {}).items()}


def _receipt_cost(turn_id: str, record: dict[str, Any]) -> int:
    return _utf8_len(json.dumps(turn_id, ensure_ascii=False)) + _utf8_len(encode_state(record)) + 2


def _trim_receipts(
    state: StoredState, costs: Mapping[str, int], receipts: ReceiptPolicy, excess: int
) -> tuple[StoredState, list[str]]:
    """Drop turn receipts (`costs`: each one's stored bytes) until about `excess` bytes are freed.

    Answer copies go first, oldest first, then the oldest receipts; the protected turn is kept. Returns the new
    state and the expired turn ids.
    """
    turns = state.get(TURNS_KEY, {})
    order = [t for t in costs if holds_copies(turns[t])] + [t for t in costs if not holds_copies(turns[t])]
    dropped: list[str] = []
    for turn_id in order:
        if excess <= 0:
            break
        if turn_id == receipts.protected_turn:
            continue
        dropped.append(turn_id)
        # An expired turn leaves its id behind (about its own length) in the list of expired turns.
        excess -= costs[turn_id] - _utf8_len(json.dumps(turn_id, ensure_ascii=False)) - 1
    return (_expired(dict(state), dropped, receipts), dropped) if dropped else (state, [])


def _drop_answer_copies(current: EncodedState, receipts: ReceiptPolicy, needed: int) -> tuple[StoredState, list[str]]:
    """Expire the oldest receipts that keep their own answer copies until about `needed` bytes are freed."""
    turns = current.state.get(TURNS_KEY, {})
    dropped: list[str] = []
    for turn_id, cost in current.receipt_costs.items():
        if needed <= 0:
            break
        if turn_id != receipts.protected_turn and holds_copies(turns[turn_id]):
            dropped.append(turn_id)
            needed -= cost
    return (_expired(dict(current.state), dropped, receipts), dropped) if dropped else (current.state, [])


def _evict_under_pressure(
    current: EncodedState, settings: RetentionSettings, receipts: ReceiptPolicy, now_ms: int
) -> RetentionOutcome:
    """Evict groups in `_eviction_steps` order until the state is down to the low watermark.

    Aims at the budget itself when what may not be evicted is already over the low watermark, and evicts
    nothing when it is over the budget. A receipt naming an evicted message expires with it. The outcome carries
    the bytes that may not be evicted.
    """
    state = current.state
    records: list[dict[str, Any]] = state.get(MESSAGES_KEY) or []
    steps = _eviction_steps(records, _evictable_groups(records))
    encoded = {index: encode_state(records[index]) for step in steps for index in step}
    turns = state.get(TURNS_KEY) or {}
    named = named_messages(turns)
    receipt_cost = current.receipt_costs
    naming: dict[str, int] = {}
    for turn_id, record in turns.items():
        for message in record.get("messages", ()):
            if isinstance(message, str):
                naming[message] = naming.get(message, 0) + receipt_cost[turn_id]
    # Each record and its comma, plus the receipt that names it (it expires with its answer).
    cost = {
        index: _utf8_len(part) + 1 + (naming.get(records[index]["id"], 0) if records[index]["id"] in named else 0)
        for index, part in encoded.items()
    }
    protected = current.size - sum(cost.values())
    low = math.floor(settings.max_state_bytes * settings.low_watermark)
    target = low if protected <= low else settings.max_state_bytes
    if protected > target or not steps:
        return RetentionOutcome(current, protected_bytes=protected)

    budget = TokenBudget.calibrated(target - protected, list(encoded.values()))
    kept_tokens = budget.tokens_for(sum(cost.values()))
    count = 0
    while count < len(steps) and kept_tokens > budget.tokens:
        kept_tokens -= budget.tokens_for(sum(cost[index] for index in steps[count]))
        count += 1
    logger.info(
        "Conversation %s is at %d of %d bytes: keeping ~%.0f tokens of evictable messages (%.2f bytes a token), "
        "evicting %d of %d eviction steps",
        state.get(CONVERSATION_ID_KEY, "?"),
        current.size,
        settings.max_state_bytes,
        budget.tokens,
        budget.bytes_per_token,
        count,
        len(steps),
    )
    while True:
        # The plan was made before the truncation record grew by its new numbers: the exact bytes decide.
        evicted = [records[index]["id"] for index in sorted(index for step in steps[:count] for index in step)]
        new, expired = _without(state, set(evicted), receipts, now_ms) if evicted else (state, [])
        candidate = current.derived(new)
        if candidate.size <= target or count == len(steps):
            return RetentionOutcome(candidate, tuple(evicted), expired_turns=tuple(expired), protected_bytes=protected)
        count += 1


def _eviction_steps(records: Sequence[dict[str, Any]], groups: list[list[int]]) -> list[list[int]]:
    """The evictable groups in the order pressure eviction takes them, each step with what must leave with it.

    Groups a stored summary stands for go first, oldest first: the model is sent the summary instead of them, so
    deleting them loses nothing it sees. Then the rest, oldest first. A summary leaves with every message still
    linked to it (transitively, for a summary of summaries), so no stored message is ever excluded by a summary that
    is gone (architecture.md, failure 18); a summary standing for a message that may not be evicted stays. Every
    prefix of the steps is closed under those links.
    """
    linked: dict[int, list[int]] = {}
    for index, summary in _summary_links(records).items():
        linked.setdefault(summary, []).append(index)
    if not linked:
        return groups
    stood_for = {index for members in linked.values() for index in members if _is_excluded(records[index])}
    group_at = {index: number for number, group in enumerate(groups) for index in group}

    def rank(number: int) -> tuple[bool, bool, int]:
        # Stood-for groups before the rest; among them the leaves (a summary only once what it stands for is gone).
        first = all(index in stood_for for index in groups[number])
        return not first, first and any(index in linked for index in groups[number]), groups[number][0]

    order = sorted(range(len(groups)), key=rank)
    taken: set[int] = set()
    steps: list[list[int]] = []
    for number in order:
        if number in taken:
            continue
        step = _with_linked(number, groups, linked, group_at, taken)
        if step is not None:
            taken.update(step)
            steps.append(sorted(index for member in step for index in groups[member]))
    return steps


def _with_linked(
    number: int, groups: list[list[int]], linked: Mapping[int, list[int]], group_at: Mapping[int, int], taken: set[int]
) -> set[int] | None:
    """Group `number` and every group not yet taken that links to a summary in it, transitively; None when one of
    those messages may not be evicted."""
    step = {number}
    pending = [number]
    while pending:
        for index in groups[pending.pop()]:
            for member in linked.get(index, ()):
                group = group_at.get(member)
                if group is None:
                    return None
                if group not in step and group not in taken:
                    step.add(group)
                    pending.append(group)
    return step


def _evictable_groups(records: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Indices of each evictable message group, oldest group first, by core's grouping.

    Grouping runs on detached copies with compaction's annotations cleared: an exclusion must not hide a message
    (only a summary standing for it makes it an early victim, in `_eviction_steps`), and nothing here may write
    into the stored records. A group is protected when any of its messages is a system message or belongs to the
    newest exchange (from the last user message on).
    """
    if not records:
        return []
    # Grouping ignores author names, so none is implied.
    detached = [record_to_message({k: v for k, v in record.items() if k != PROPS_KEY}, None) for record in records]
    newest = _newest_exchange_start(records)
    members: dict[str, list[int]] = {}
    for span in group_messages(detached):
        members.setdefault(str(span["group_id"]), []).extend(range(span["start_index"], span["end_index"] + 1))
    groups = [sorted(indices) for indices in members.values()]
    evictable = [
        indices
        for indices in groups
        if not any(index >= newest or records[index]["role"] == "system" for index in indices)
    ]
    return sorted(evictable, key=lambda indices: indices[0])


def _newest_exchange_start(records: Sequence[dict[str, Any]]) -> int:
    for index in range(len(records) - 1, -1, -1):
        if records[index]["role"] == "user":
            return index
    return len(records) - 1


def _compacted_ids(records: Sequence[dict[str, Any]]) -> list[str]:
    """Ids of the evictable groups compaction excluded entirely (`follow_compaction` deletes them).

    A summary among them stays while a message it stands for stays (architecture.md, failure 18).
    """
    if not any(_is_excluded(record) for record in records):
        return []
    compacted = [group for group in _evictable_groups(records) if all(_is_excluded(records[i]) for i in group)]
    links = _summary_links(records)
    doomed = {index for group in compacted for index in group}
    # A summary a staying message is linked to stays, and so, in turn, does the summary it is linked to.
    while held := {summary for index, summary in links.items() if index not in doomed and summary in doomed}:
        compacted = [group for group in compacted if held.isdisjoint(group)]
        doomed = {index for group in compacted for index in group}
    return [records[index]["id"] for group in compacted for index in group]


def _reinstate_orphaned_exclusions(state: StoredState) -> StoredState:
    """`state` with every message excluded by a summary that is no longer stored included again.

    The model would be sent neither the message nor its summary. Core treats a summary it cannot find the same way
    (its exclusions are dropped). Only states retention wrote before summaries were evicted with what they stand
    for have such messages (architecture.md, failure 18).
    """
    records: list[dict[str, Any]] = state.get(MESSAGES_KEY) or []
    linked = [index for index, record in enumerate(records) if _is_excluded(record) and _summary_link(record)]
    if not linked:
        return state
    stored = {record["id"] for record in records}
    orphaned = [index for index in linked if _summary_link(records[index]) not in stored]
    if not orphaned:
        return state
    repaired = list(records)
    for index in orphaned:
        props = copy.deepcopy(records[index][PROPS_KEY])
        props.pop(EXCLUDED_KEY, None)
        props.pop(EXCLUDE_REASON_KEY, None)
        props[GROUP_ANNOTATION_KEY].pop(SUMMARIZED_BY_SUMMARY_ID_KEY, None)
        repaired[index] = {**records[index], PROPS_KEY: props}
    logger.warning(
        "Conversation %s: included %d messages again whose summary is no longer stored",
        state.get(CONVERSATION_ID_KEY, "?"),
        len(orphaned),
    )
    return {**state, MESSAGES_KEY: repaired}


def _summary_links(records: Sequence[dict[str, Any]]) -> dict[int, int]:
    """For each stored message a stored compaction summary stands for, the summary's position."""
    links = {index: link for index, record in enumerate(records) if (link := _summary_link(record)) is not None}
    if not links:
        return {}
    position = {record["id"]: index for index, record in enumerate(records)}
    return {index: position[link] for index, link in links.items() if position.get(link, index) != index}


def _summary_link(record: Mapping[str, Any]) -> str | None:
    """The id of the compaction summary that stands for this stored message, if one does."""
    props = record.get(PROPS_KEY)
    group = props.get(GROUP_ANNOTATION_KEY) if props else None
    link = group.get(SUMMARIZED_BY_SUMMARY_ID_KEY) if isinstance(group, dict) else None
    return link if isinstance(link, str) else None


def _is_excluded(record: Mapping[str, Any]) -> bool:
    props = record.get(PROPS_KEY)
    return bool(props and props.get(EXCLUDED_KEY))


def _without(state: StoredState, ids: set[str], receipts: ReceiptPolicy, now_ms: int) -> tuple[StoredState, list[str]]:
    """A copy of `state` without the messages `ids`, counted in its truncation record; receipts naming a deleted
    message expire with it.

    Returns the new state and the expired turn ids.
    """
    kept = [record for record in state[MESSAGES_KEY] if record["id"] not in ids]
    truncation = dict(state.get(TRUNCATION_KEY) or {})
    truncation[EVICTED_MESSAGES_KEY] = truncation.get(EVICTED_MESSAGES_KEY, 0) + len(state[MESSAGES_KEY]) - len(kept)
    if truncation.get(FIRST_EVICTED_AT_KEY) is None:
        truncation[FIRST_EVICTED_AT_KEY] = now_ms
    truncation[LAST_EVICTED_AT_KEY] = now_ms
    new = {**state, MESSAGES_KEY: kept, TRUNCATION_KEY: truncation}
    expired = [
        turn_id
        for turn_id, record in state.get(TURNS_KEY, {}).items()
        if any(isinstance(message, str) and message in ids for message in record.get("messages", ()))
    ]
    return _expired(new, expired, receipts), expired


def _expired(state: StoredState, turn_ids: Sequence[str], receipts: ReceiptPolicy) -> StoredState:
    """`state` (a copy the caller owns) with these turns' receipts dropped and counted as expired answers."""
    if not turn_ids:
        return state
    expire_turns(state, turn_ids, max_records=receipts.max_records)
    truncation = dict(state.get(TRUNCATION_KEY) or {})
    truncation[EXPIRED_ANSWERS_KEY] = truncation.get(EXPIRED_ANSWERS_KEY, 0) + len(turn_ids)
    state[TRUNCATION_KEY] = truncation
    return state


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))
