"""Retention: how much one conversation may store, and what may be deleted to stay under it.

Modes (per conversation, in the entity state):

- ``keep_all`` never deletes; a turn that would take the state over its budget is refused before the model runs.
- ``auto`` deletes only under pressure: once the stored state reaches the high watermark it evicts the oldest
  message groups down to the low watermark.
- ``follow_compaction`` first deletes what compaction excluded, then applies the same pressure eviction.

Everything is measured on the exact bytes the entity stores (`encode_state`). Core's message grouping decides
what goes together, so a tool call and its results are evicted together or not at all. System messages and the
newest exchange are never evicted, and a turn record keeps a copy of any answer evicted from the transcript
(failures 7 and 8).
The functions here are pure: they take the JSON-shaped state and return a new one, leaving the input unchanged.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from agent_framework import EXCLUDED_KEY, CharacterEstimatorTokenizer
from agent_framework._compaction import group_messages

from .._errors import InvalidRequestError, StateCapacityExceededError
from .history import MESSAGES_KEY, record_to_message
from .state import RetentionModeName, RetentionSettings, encode_state
from .turn_records import TURNS_KEY, keep_delivered_answers, named_messages

logger = logging.getLogger("agent_host.retention")

RetentionMode = RetentionModeName
RETENTION_MODES: tuple[str, ...] = get_args(RetentionModeName)
KEEP_ALL: RetentionMode = "keep_all"
AUTO: RetentionMode = "auto"
FOLLOW_COMPACTION: RetentionMode = "follow_compaction"

RETENTION_KEY = "retention"
TRUNCATION_KEY = "truncation"
CAPACITY_ERROR_KEY = "capacityError"
EVICTED_MESSAGES_KEY = "evictedMessages"
FIRST_EVICTED_AT_KEY = "firstEvictedAt"
LAST_EVICTED_AT_KEY = "lastEvictedAt"
PROPS_KEY = "props"
# The smallest budget a caller may set: an empty conversation alone takes a few hundred bytes.
MIN_STATE_BYTES = 4096
_REQUEST_FIELDS = {"mode", "maxStateBytes", "highWatermark", "lowWatermark"}
_TOKENIZER = CharacterEstimatorTokenizer()


@dataclass(frozen=True)
class TokenBudget:
    """A byte allowance expressed in core's token units, calibrated on persisted bytes (failure 6).

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
class RetentionOutcome:
    """What enforcing retention did to a conversation's state.

    Attributes:
        state: The state to commit (the input object itself when nothing changed).
        text: Its exact encoding, the string the entity stores.
        state_bytes: The stored size in UTF-8 bytes.
        evicted_ids: Ids of the messages deleted under pressure, oldest first.
        followed_ids: Ids of the messages deleted because compaction excluded them (`follow_compaction`).
    """

    state: dict[str, Any]
    text: str
    state_bytes: int
    evicted_ids: tuple[str, ...] = ()
    followed_ids: tuple[str, ...] = ()


def validate_watermarks(low: float, high: float) -> None:
    """Check that 0 < low < high <= 1.

    Raises:
        ValueError: naming both values and the rule.
    """
    if not 0 < low < high <= 1:
        raise ValueError(
            f"Retention watermarks must satisfy 0 < low < high <= 1; got low={low!r}, high={high!r} "
            "(defaults: high 0.85, low 0.70)."
        )


def validated_retention(data: object) -> RetentionSettings:
    """Retention settings from a request (`{"mode", "maxStateBytes", "highWatermark"?, "lowWatermark"?}`).

    Omitted watermarks take their defaults (0.85 and 0.70).

    Raises:
        InvalidRequestError: with code `invalid_retention`, naming the valid values.
    """
    modes = ", ".join(f"'{mode}'" for mode in RETENTION_MODES)
    if not isinstance(data, Mapping):
        raise _invalid(
            f'The body must be a JSON object like {{"mode": "auto", "maxStateBytes": 1048576}}, '
            f"got {type(data).__name__}."
        )
    unknown = sorted(set(data) - _REQUEST_FIELDS)
    if unknown:
        raise _invalid(
            f"Unknown retention field(s) {', '.join(unknown)}; send mode, maxStateBytes and optionally "
            "highWatermark and lowWatermark."
        )
    mode = data.get("mode")
    if mode not in RETENTION_MODES:
        raise _invalid(f"mode {mode!r} is not a retention mode; use one of {modes}.")
    budget = data.get("maxStateBytes")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < MIN_STATE_BYTES:
        raise _invalid(f"maxStateBytes must be a whole number of bytes, at least {MIN_STATE_BYTES}; got {budget!r}.")
    defaults = RetentionSettings()
    high = data.get("highWatermark", defaults.high_watermark)
    low = data.get("lowWatermark", defaults.low_watermark)
    for name, value in (("highWatermark", high), ("lowWatermark", low)):
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise _invalid(f"{name} must be a number between 0 and 1; got {value!r}.")
    try:
        validate_watermarks(float(low), float(high))
    except ValueError as exc:
        raise _invalid(str(exc)) from None
    return RetentionSettings(mode=mode, max_state_bytes=budget, high_watermark=float(high), low_watermark=float(low))


def _invalid(message: str) -> InvalidRequestError:
    return InvalidRequestError(message, code="invalid_retention")


def apply_retention_settings(state: dict[str, Any], settings: RetentionSettings, now_ms: int) -> dict[str, Any]:
    """A copy of `state` with new retention settings; they take effect on the next turn.

    A reported capacity error is dropped when the state now fits the new budget.
    """
    new = copy.copy(state)
    new[RETENTION_KEY] = settings.model_dump(by_alias=True, mode="json")
    new["updatedAt"] = now_ms
    if CAPACITY_ERROR_KEY in new and state_bytes(new) <= settings.max_state_bytes:
        del new[CAPACITY_ERROR_KEY]
    return new


def state_bytes(state: dict[str, Any]) -> int:
    """The size of the state as the entity stores it, in UTF-8 bytes."""
    return _utf8_len(encode_state(state))


def retention_of(state: Mapping[str, Any]) -> RetentionSettings:
    """The conversation's retention settings (the defaults for state written without them)."""
    return RetentionSettings.model_validate(state.get(RETENTION_KEY) or {})


def ensure_room_for_turn(state: dict[str, Any], incoming: dict[str, Any], stored_bytes: int | None = None) -> None:
    """Refuse a `keep_all` turn before the model runs when the state would go over its budget.

    `incoming` is the stored record of the turn's input message; `stored_bytes` the size of the state as stored,
    when the caller already has it (it saves encoding the whole state again). The answer's size cannot be known
    before the model runs, so a turn may still end over the budget; the next one is then refused.

    Raises:
        StateCapacityExceededError: the mode is `keep_all` and the state with the input is over the budget.
    """
    settings = retention_of(state)
    if settings.mode != KEEP_ALL:
        return
    size = stored_bytes if stored_bytes is not None else state_bytes(state)
    projected = size + _utf8_len(encode_state(incoming)) + 1
    if projected <= settings.max_state_bytes:
        return
    conversation = state.get("conversationId", "?")
    logger.warning(
        "Refused a turn of conversation %s: %d bytes, %d with the message, budget %d (keep_all)",
        conversation,
        size,
        projected,
        settings.max_state_bytes,
    )
    raise StateCapacityExceededError(
        f"Conversation '{conversation}' stores {size} bytes and this message would take it to {projected} bytes, "
        f"over its budget of {settings.max_state_bytes} bytes (maxStateBytes). Its retention mode 'keep_all' never "
        "deletes, so the turn was refused before the model ran and the conversation was left unchanged. Switch "
        "the conversation to retention mode 'auto' or 'follow_compaction' (oldest messages are deleted to make "
        "room), raise maxStateBytes, or start a new conversation."
    )


def retain_after_turn(
    state: dict[str, Any], turn: Mapping[str, Any], *, now_ms: int, text: str
) -> tuple[dict[str, Any], str]:
    """The state to commit after a turn, and its exact encoding.

    A completed turn is followed by the conversation's retention (`enforce_retention`); a turn refused for
    capacity leaves the conversation reporting why, so a reader of the conversation sees it too; any other
    failed turn changes nothing here.
    """
    if turn["status"] == "completed":
        outcome = enforce_retention(state, now_ms=now_ms, text=text)
        return outcome.state, outcome.text
    error = turn.get("error") or {}
    if error.get("code") == StateCapacityExceededError.code and state.get(CAPACITY_ERROR_KEY) != error:
        reported = {**state, CAPACITY_ERROR_KEY: dict(error)}
        return reported, encode_state(reported)
    return state, text


def enforce_retention(state: dict[str, Any], *, now_ms: int, text: str | None = None) -> RetentionOutcome:
    """Apply the conversation's retention mode after a successful turn.

    Args:
        state: The state about to be committed (with the turn's record); not modified.
        now_ms: The time recorded for evictions.
        text: `encode_state(state)` when the caller has it already, to avoid encoding twice.

    Returns:
        The state to commit and its exact encoding. When even what may not be evicted is over the budget,
        nothing is evicted and the state carries a `state_capacity_exceeded` error instead.
    """
    settings = retention_of(state)
    text = encode_state(state) if text is None else text
    size = _utf8_len(text)
    new = state
    followed: list[str] = []
    evicted: list[str] = []

    if settings.mode == FOLLOW_COMPACTION:
        followed = _compacted_ids(state[MESSAGES_KEY]) if state.get(MESSAGES_KEY) else []
        if followed:
            new = _without(state, set(followed), now_ms)
            text = encode_state(new)
            size = _utf8_len(text)

    high = math.floor(settings.max_state_bytes * settings.high_watermark)
    fixed_bytes = size
    if settings.mode != KEEP_ALL and size >= high:
        new, text, size, evicted, fixed_bytes = _evict_under_pressure(new, text, size, settings, now_ms)

    error = _capacity_error(new, size, fixed_bytes, settings)
    if error != new.get(CAPACITY_ERROR_KEY):
        new = copy.copy(new)
        if error is None:
            del new[CAPACITY_ERROR_KEY]
        else:
            new[CAPACITY_ERROR_KEY] = error
        text = encode_state(new)
        size = _utf8_len(text)

    if followed or evicted:
        logger.info(
            "Retention (%s) deleted %d compacted and evicted %d messages of conversation %s; now %d bytes "
            "(budget %d, watermarks %.2f/%.2f)",
            settings.mode,
            len(followed),
            len(evicted),
            state.get("conversationId", "?"),
            size,
            settings.max_state_bytes,
            settings.high_watermark,
            settings.low_watermark,
        )
    if error is not None and error != state.get(CAPACITY_ERROR_KEY):
        logger.warning("Conversation %s: %s", state.get("conversationId", "?"), error["message"])
    return RetentionOutcome(new, text, size, tuple(evicted), tuple(followed))


def _evict_under_pressure(
    state: dict[str, Any], text: str, size: int, settings: RetentionSettings, now_ms: int
) -> tuple[dict[str, Any], str, int, list[str], int]:
    """Evict the oldest evictable groups until the state is down to the low watermark.

    Aims at the budget itself when what may not be evicted is already over the low watermark, and evicts
    nothing when it is over the budget. Returns the new state, its encoding and size, the evicted ids and the
    bytes that may not be evicted.
    """
    records: list[dict[str, Any]] = state.get(MESSAGES_KEY) or []
    groups = _evictable_groups(records)
    encoded = {index: encode_state(records[index]) for group in groups for index in group}
    # Each record and its comma; a message a turn record names as its answer moves there, freeing about its id.
    named = named_messages(state.get(TURNS_KEY) or {})
    cost = {
        index: (len(encode_state(records[index]["id"])) if records[index]["id"] in named else _utf8_len(part)) + 1
        for index, part in encoded.items()
    }
    fixed_bytes = size - sum(cost.values())
    low = math.floor(settings.max_state_bytes * settings.low_watermark)
    target = low if fixed_bytes <= low else settings.max_state_bytes
    if fixed_bytes > target or not groups:
        return state, text, size, [], fixed_bytes

    budget = TokenBudget.calibrated(target - fixed_bytes, list(encoded.values()))
    kept_tokens = budget.tokens_for(sum(cost.values()))
    count = 0
    while count < len(groups) and kept_tokens > budget.tokens:
        kept_tokens -= budget.tokens_for(sum(cost[index] for index in groups[count]))
        count += 1
    logger.info(
        "Conversation %s is at %d of %d bytes: keeping ~%.0f tokens of evictable messages (%.2f bytes a token), "
        "evicting the %d oldest of %d evictable groups",
        state.get("conversationId", "?"),
        size,
        settings.max_state_bytes,
        budget.tokens,
        budget.bytes_per_token,
        count,
        len(groups),
    )
    while True:
        # The plan was made before the truncation record grew by its new numbers: the exact bytes decide.
        evicted = [records[index]["id"] for group in groups[:count] for index in group]
        new = _without(state, set(evicted), now_ms) if evicted else state
        text = encode_state(new) if evicted else text
        size = _utf8_len(text)
        if size <= target or count == len(groups):
            return new, text, size, evicted, fixed_bytes
        count += 1


def _evictable_groups(records: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Indices of each evictable message group, oldest group first, by core's grouping.

    Grouping runs on detached copies with compaction's annotations cleared: an exclusion is no consent to
    delete, so it must neither hide a message nor make it a preferred victim, and nothing here may write into
    the stored records. A group is protected when any of its messages is a system message or belongs to the
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
    """Ids of the evictable groups compaction excluded entirely (`follow_compaction` deletes them)."""
    if not any((record.get(PROPS_KEY) or {}).get(EXCLUDED_KEY) for record in records):
        return []
    return [
        records[index]["id"]
        for group in _evictable_groups(records)
        if all((records[index].get(PROPS_KEY) or {}).get(EXCLUDED_KEY) for index in group)
        for index in group
    ]


def _without(state: dict[str, Any], ids: set[str], now_ms: int) -> dict[str, Any]:
    """A copy of `state` without the messages `ids`, the deletion added to its truncation record.

    Turn records naming a deleted message keep a copy of it: a caller may not have read the answer yet (failure 8).
    """
    new = copy.copy(state)
    kept = [record for record in state[MESSAGES_KEY] if record["id"] not in ids]
    removed = len(state[MESSAGES_KEY]) - len(kept)
    new[MESSAGES_KEY] = kept
    if TURNS_KEY in state:
        new[TURNS_KEY] = keep_delivered_answers(state[TURNS_KEY], state[MESSAGES_KEY], kept)
    truncation = dict(state.get(TRUNCATION_KEY) or {})
    truncation[EVICTED_MESSAGES_KEY] = truncation.get(EVICTED_MESSAGES_KEY, 0) + removed
    if truncation.get(FIRST_EVICTED_AT_KEY) is None:
        truncation[FIRST_EVICTED_AT_KEY] = now_ms
    truncation[LAST_EVICTED_AT_KEY] = now_ms
    new[TRUNCATION_KEY] = truncation
    return new


def _capacity_error(
    state: dict[str, Any], size: int, fixed_bytes: int, settings: RetentionSettings
) -> dict[str, str] | None:
    """The `state_capacity_exceeded` error a conversation reports after a completed turn, or None.

    Under `keep_all` a completed turn reports nothing (and clears an earlier refusal): the state may have gone
    over its budget by this answer, and the next turn's refusal reports that with its numbers.
    """
    budget = settings.max_state_bytes
    if size <= budget or settings.mode == KEEP_ALL:
        return None
    message = (
        f"Conversation '{state.get('conversationId', '?')}' stores {size} bytes, over its budget of {budget} bytes, "
        f"and {min(fixed_bytes, size)} bytes of it may not be evicted (system messages, the newest exchange, the "
        "turn results kept for callers and the session). Nothing was deleted; the answer was delivered. "
        "Raise maxStateBytes or start a new conversation."
    )
    return StateCapacityExceededError(message).to_record()


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))
