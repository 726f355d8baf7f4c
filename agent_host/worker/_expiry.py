"""Idle expiry on durabletask: each conversation entity schedules its own idle check, a signal to itself delivered
later (durabletask's `signal_entity(..., signal_time=...)`), where the Functions host runs one orchestration per
conversation (agent_host/_expiry/).

The operation that creates a conversation (its first turn, or the first after a delete, a retention change or a
cancel of a new id) schedules a check for one TTL after it. A check that finds the conversation active schedules the
next for when it would next be idle for its TTL; one that finds it expired (deleted by that check), gone, unreadable,
or its TTL now off, schedules none. A schedule is an action of the operation, committed with its state, so no
conversation is created without its check. A check names the conversation it was scheduled for (its `createdAt`):
once that one was deleted, a later conversation of the same id has a check of its own and the old one ends.

The check judges by the worker's clock (`Clock`), the clock every stored time comes from, and the TTL the agent has
when it runs; the entity decides (`_conversation/expiry.py`). A backend whose clock runs ahead of the worker's
delivers a check before it is due; the next is then scheduled that much later, so checks never spin.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

from durabletask.entities import EntityContext
from pydantic import BaseModel, ConfigDict, StrictInt
from pydantic.alias_generators import to_camel

from .._clock import Clock
from .._contract import EXPIRE_OPERATION, ExpireOperation
from .._conversation.state_cache import CONVERSATION_CACHE
from .._conversation.view import ConversationView
from .._errors import AgentHostError
from ._state_converter import StateText

# A check delivered before its time asks for the next at least this much later (in the backend's time).
MIN_RECHECK_MS = 1000

EntityOperation = Callable[[Any], Any]
"""Runs one operation of the conversation entity on the given input and returns its result."""


class IdleCheck(BaseModel):
    """A scheduled check's input: when it is due by the worker's clock, when the backend was asked to deliver it,
    and which conversation it watches (its `createdAt`)."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    check_at: StrictInt
    signal_at: StrictInt
    created_at: StrictInt | None = None


class IdleExpiry:
    """The idle checks of one agent's conversation entities on a durabletask worker.

    Args:
        agent_name: The agent (its conversations are cached under it).
        ttl_seconds: How long a conversation may stay idle (0: never expires; checks already scheduled then end).
        clock: The worker's clock.
    """

    def __init__(self, agent_name: str, ttl_seconds: float, clock: Clock) -> None:
        self.agent_name = agent_name
        self.ttl_seconds = ttl_seconds
        self.clock = clock

    def run(self, context: EntityContext, operation_input: Any, operation: EntityOperation) -> Any:
        """Run one entity operation (`operation`), scheduling the checks it calls for; an idle check runs as the
        entity's `expire_if_idle` with the worker's time and the agent's TTL now."""
        if context.operation == EXPIRE_OPERATION:
            return self._check(context, operation_input, operation)
        created = self.ttl_seconds > 0 and self._view(context) is None
        result = operation(operation_input)
        if created:
            view = self._view(context)
            if view is not None and view.updated_at is not None:
                check_at = view.updated_at + self._ttl_ms()
                self._schedule(context, IdleCheck(check_at=check_at, signal_at=check_at, created_at=view.created_at))
        return result

    def _check(self, context: EntityContext, operation_input: Any, operation: EntityOperation) -> Any:
        check = IdleCheck.model_validate(operation_input)
        view = self._view(context)
        if view is not None and None not in (view.created_at, check.created_at) and view.created_at != check.created_at:
            return {"status": "gone"}  # its conversation was deleted; this one has a check of its own
        now = self.clock.now_ms()
        expire = ExpireOperation(now_ms=now, ttl_seconds=self.ttl_seconds)
        verdict = operation(expire.model_dump(by_alias=True))
        check_at = verdict.get("checkAt") if isinstance(verdict, dict) and verdict.get("status") == "active" else None
        if isinstance(check_at, int):
            if check_at > check.signal_at:
                signal_at = check_at
            else:  # delivered before the worker's clock reached it: the backend's clock is ahead by the difference
                signal_at = check.signal_at + max(check_at - now, MIN_RECHECK_MS)
            self._schedule(context, IdleCheck(check_at=check_at, signal_at=signal_at, created_at=check.created_at))
        return verdict

    def _schedule(self, context: EntityContext, check: IdleCheck) -> None:
        at = datetime.datetime.fromtimestamp(check.signal_at / 1000, tz=datetime.UTC)
        context.signal_entity(context.entity_id, EXPIRE_OPERATION, check.model_dump(by_alias=True), signal_time=at)

    def _view(self, context: EntityContext) -> ConversationView | None:
        """The conversation as stored now, or None when there is none or only a deleted one's tombstone; state that
        cannot be read counts as a conversation (its check, if any, finds it unreadable)."""
        raw = context.get_state(StateText)
        if raw is None:
            return None
        try:
            view = ConversationView(CONVERSATION_CACHE.decode(self.agent_name, context.entity_id.key, str(raw)))
        except AgentHostError:
            return ConversationView.empty()
        return None if view.is_deleted else view

    def _ttl_ms(self) -> int:
        return math.ceil(self.ttl_seconds * 1000)
