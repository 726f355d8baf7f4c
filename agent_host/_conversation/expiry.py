"""Idle expiry as the conversation entity decides it: has this conversation gone its TTL without activity?

Activity is what moves the stored `updatedAt`: a turn (answered or failed) and a retention change. Reads write
nothing, so they do not count. The time compared with it is the expiry orchestration's (`ExpireOperation.now_ms`),
never this process's clock. An idle conversation is deleted by the entity's own delete (the tombstone a DELETE
leaves); this module decides, names the change and reports it. Knows the stored state; nothing of orchestrations.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Literal

from .._contract import ExpireOperation
from .._expiry_settings import describe_ttl
from .._telemetry import telemetry
from .state import DELETED_KEY, MESSAGES_KEY, TURNS_KEY, UPDATED_AT_KEY

# Expiry reports on the retention logger: it is retention's other way of deleting (docs/retention.md).
logger = logging.getLogger("agent_host.retention")

ExpiryStatus = Literal["active", "expired", "gone", "off", "unreadable"]
ACTIVE: ExpiryStatus = "active"
EXPIRED: ExpiryStatus = "expired"
GONE: ExpiryStatus = "gone"
OFF: ExpiryStatus = "off"
UNREADABLE: ExpiryStatus = "unreadable"
# An expiry's deletion is acknowledged like a DELETE request's, under a change id of its own.
EXPIRY_CHANGE_PREFIX = "expiry-"


@dataclass(frozen=True)
class ExpiryVerdict:
    """What the entity decided about an idle conversation, and what the expiry orchestration does next.

    Attributes:
        status: `active` (not idle long enough: look again at `check_at_ms`), `expired` (idle for the TTL: deleted
            now), `gone` (deleted or never created: nothing to watch), `off` (the TTL is 0 now) or `unreadable`
            (left as it is).
        check_at_ms: When the conversation would next be idle for its TTL, if it stays untouched (`active` only).
        idle_ms: How long the conversation had been idle at the orchestration's time.
        messages: Messages the conversation held (`expired` only; for the log).
        turns: Turn receipts it held (`expired` only; for the log).
    """

    status: ExpiryStatus
    check_at_ms: int | None = None
    idle_ms: int | None = None
    messages: int = 0
    turns: int = 0

    def result(self) -> dict[str, Any]:
        """The operation's (small) result, as the expiry orchestration reads it."""
        if self.status == ACTIVE:
            return {"status": self.status, "checkAt": self.check_at_ms}
        return {"status": self.status}


def expiry_verdict(raw: str | None, request: ExpireOperation) -> ExpiryVerdict:
    """Decide from the stored state (`raw`, as stored; None when there is none) whether the conversation expired.

    Only `updatedAt` and the tombstone are read, so a conversation whose schema this code would refuse still has its
    age judged; state that is not even JSON is left alone (a DELETE removes it).
    """
    if request.ttl_seconds == 0:
        return ExpiryVerdict(OFF)
    if raw is None:
        return ExpiryVerdict(GONE)
    try:
        data = json.loads(raw)
    except ValueError:
        return ExpiryVerdict(UNREADABLE)
    if not isinstance(data, dict):
        return ExpiryVerdict(UNREADABLE)
    if DELETED_KEY in data:
        return ExpiryVerdict(GONE)
    updated = data.get(UPDATED_AT_KEY)
    if type(updated) is not int:
        return ExpiryVerdict(UNREADABLE)
    ttl_ms = math.ceil(request.ttl_seconds * 1000)
    idle_ms = request.now_ms - updated
    if idle_ms < ttl_ms:
        return ExpiryVerdict(ACTIVE, check_at_ms=updated + ttl_ms, idle_ms=idle_ms)
    messages = data.get(MESSAGES_KEY)
    turns = data.get(TURNS_KEY)
    return ExpiryVerdict(
        EXPIRED,
        idle_ms=idle_ms,
        messages=len(messages) if isinstance(messages, list) else 0,
        turns=len(turns) if isinstance(turns, dict) else 0,
    )


def expiry_change_id(request: ExpireOperation) -> str:
    """The change id the expiry's deletion is acknowledged under (unique per check time, within the id pattern)."""
    return f"{EXPIRY_CHANGE_PREFIX}{request.now_ms:x}"


def report_expiry(agent: str, conversation_id: str, verdict: ExpiryVerdict, request: ExpireOperation) -> None:
    """Log a conversation's deletion for idleness on `agent_host.retention` and count it in the metrics."""
    logger.info(
        "Conversation %s of agent %s expired: idle for %s (TTL %s); deleted it with %d messages and %d turn receipts",
        conversation_id,
        agent,
        _duration(verdict.idle_ms or 0),
        describe_ttl(float(request.ttl_seconds)),
        verdict.messages,
        verdict.turns,
        extra={
            "agent": agent,
            "conversation_id": conversation_id,
            "idle_ms": verdict.idle_ms,
            "ttl_seconds": request.ttl_seconds,
            "deleted_messages": verdict.messages,
            "deleted_turns": verdict.turns,
        },
    )
    telemetry().record_expiry(agent=agent)


def report_unreadable(agent: str, conversation_id: str) -> None:
    """Say that an idle check found state it cannot read, and left it (a DELETE removes it)."""
    logger.warning(
        "Conversation %s of agent %s could not be checked for expiry: its stored state is not readable; it is kept "
        "until deleted (DELETE .../conversations/%s)",
        conversation_id,
        agent,
        conversation_id,
    )


def _duration(milliseconds: int) -> str:
    """`3d 4h`, `5h 2m`, `12m 5s` or `40s`: an idle time as a person reads it."""
    seconds = milliseconds // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {seconds}s"
    return f"{seconds}s"
