"""The conversation entity: one operation runs one turn on a copy of the agent and commits it. Knows nothing of HTTP.

An operation builds the new state aside and commits it only at the end: a raised exception marks the operation
failed, but the host does not roll back in-place changes, so nothing is written until everything succeeded.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

import azure.durable_functions as df
from agent_framework import (
    Agent,
    AgentResponse,
    ContextProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    SupportsAgentRun,
)

from .._clock import SYSTEM_CLOCK, Clock
from .._errors import AgentHostError, IdempotencyConflictError, InvalidRequestError, TurnFailedError
from .._event_loop import AGENT_LOOP, RunTimeoutError
from .._telemetry import telemetry
from .approvals import PENDING_APPROVALS_KEY, answer_contents, pending_from_response, remaining_after
from .history import (
    MESSAGES_KEY,
    DurableHistoryProvider,
    assign_transcript_ids,
    delivered_response,
    message_to_record,
    reconcile_by_message_id,
)
from .retention import apply_retention_settings, ensure_room_for_turn, retain_after_turn, validated_retention
from .sessions import restore_session, session_id_for, snapshot_session
from .state import RetentionSettings, encode_state, new_state
from .state_cache import CONVERSATION_CACHE
from .turn_records import (
    DEFAULT_MAX_TURN_RECORDS,
    DEFAULT_TURN_RECORD_TTL_SECONDS,
    TURNS_KEY,
    alias_record,
    completed_record,
    failed_record,
    find_keyed_turn,
    keep_delivered_answers,
    record_turn,
)

logger = logging.getLogger("agent_host.entity")

RUN_OPERATION = "run"
DELETE_OPERATION = "delete"
SET_RETENTION_OPERATION = "set_retention"

HistoryOwner = Literal["durable", "external", "service"]


@dataclass(frozen=True)
class HistoryPlan:
    """Who keeps an agent's history, and the provider list its per-turn copies run with."""

    owner: HistoryOwner
    providers: tuple[ContextProvider, ...]
    durable: DurableHistoryProvider | None


def resolve_store(agent: SupportsAgentRun, run_options: dict[str, Any] | None = None) -> bool:
    """Whether the model service keeps the history, by core's precedence (failure 10).

    An explicit `store` in the run options wins, then the agent's `default_options["store"]`, then the
    chat client's `STORES_BY_DEFAULT`.
    """
    for options in (run_options or {}, getattr(agent, "default_options", None) or {}):
        if options.get("store") is not None:
            return bool(options["store"])
    return bool(getattr(getattr(agent, "client", None), "STORES_BY_DEFAULT", False))


def plan_history(agent: SupportsAgentRun) -> HistoryPlan:
    """Decide at registration who owns the agent's history, without touching the agent.

    Raises:
        ValueError: the agent has more than one in-memory or durable history provider.
    """
    providers = list(getattr(agent, "context_providers", []) or [])
    if resolve_store(agent):
        return HistoryPlan("service", tuple(providers), None)
    replaceable = [
        index
        for index, provider in enumerate(providers)
        if type(provider) is InMemoryHistoryProvider or isinstance(provider, DurableHistoryProvider)
    ]
    if len(replaceable) > 1:
        raise ValueError(
            f"Agent '{agent.name}' has {len(replaceable)} in-memory history providers; the host keeps one durable "
            "transcript per conversation. Keep one InMemoryHistoryProvider (or DurableHistoryProvider)."
        )
    if replaceable:
        index = replaceable[0]
        found = providers[index]
        durable = found if isinstance(found, DurableHistoryProvider) else DurableHistoryProvider.replacing(found)
        providers[index] = durable
        return HistoryPlan("durable", tuple(providers), durable)
    if any(isinstance(provider, HistoryProvider) and provider.load_messages for provider in providers):
        return HistoryPlan("external", tuple(providers), None)
    # Core would append an InMemoryHistoryProvider at run time here; append its durable twin instead.
    durable = DurableHistoryProvider()
    return HistoryPlan("durable", (*providers, durable), durable)


class ConversationEntity:
    """Runs the operations of one agent's conversation entities.

    Args:
        agent_name: The registered agent name (the entity's agent).
        agent: The caller's agent; never mutated, each turn runs on a shallow copy.
        retention: Default retention for new conversations.
        max_turn_records: How many turn records each conversation keeps for its callers.
        turn_record_ttl_seconds: How long a turn record is kept for its callers.
        run_timeout_seconds: How long one agent run may take before the turn fails.
        clock: Where the time of records, TTLs and evictions comes from.
    """

    def __init__(
        self,
        agent_name: str,
        agent: SupportsAgentRun,
        *,
        retention: RetentionSettings,
        max_turn_records: int = DEFAULT_MAX_TURN_RECORDS,
        turn_record_ttl_seconds: float = DEFAULT_TURN_RECORD_TTL_SECONDS,
        run_timeout_seconds: float = 230.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.agent_name = agent_name
        self.agent = agent
        self.plan = plan_history(agent)
        self.retention = retention
        self.max_turn_records = max_turn_records
        self.turn_record_ttl_seconds = turn_record_ttl_seconds
        self.run_timeout_seconds = run_timeout_seconds
        self.clock = clock

    def __call__(self, context: df.DurableEntityContext) -> None:
        """The entity function body: dispatch one operation of the host's batch."""
        operation = context.operation_name
        if operation == RUN_OPERATION:
            self._run(context)
        elif operation == DELETE_OPERATION:
            # set_result marks the entity as existing again, so it must come before destruct_on_exit.
            context.set_result({"deleted": True})
            context.destruct_on_exit()
        elif operation == SET_RETENTION_OPERATION:
            self._set_retention(context)
        else:
            raise InvalidRequestError(
                f"Unknown entity operation '{operation}'; expected 'run', 'delete' or 'set_retention'."
            )

    def _run(self, context: df.DurableEntityContext) -> None:
        request = context.get_input()
        if not isinstance(request, dict) or not isinstance(request.get("turnId"), str):
            raise InvalidRequestError("The 'run' operation needs an input object with 'turnId' and 'message'.")
        turn_id: str = request["turnId"]
        raw = read_raw_state(context)
        state = self._load_state(context, raw)
        if turn_id in state.get("turns", {}):
            # Signals arrive at least once: a known turn id returns its recorded result (failure 9).
            context.set_result({"turnId": turn_id, "status": state["turns"][turn_id]["status"], "duplicate": True})
            return
        started = time.perf_counter()
        stored_bytes = len(raw.encode("utf-8")) if raw is not None else None
        committed = self.run_turn(state, context.entity_key, turn_id, request, stored_bytes=stored_bytes)
        committed, text = retain_after_turn(
            committed,
            committed["turns"][turn_id],
            now_ms=self.clock.now_ms(),
            text=CONVERSATION_CACHE.encode(self.agent_name, context.entity_key, committed),
        )
        CONVERSATION_CACHE.remember(self.agent_name, context.entity_key, committed, text)
        write_raw_state(context, text)
        context.set_result({"turnId": turn_id, "status": committed["turns"][turn_id]["status"]})
        self._record_telemetry(state, committed, context.entity_key, turn_id, text, time.perf_counter() - started)

    def _record_telemetry(
        self,
        before: dict[str, Any],
        after: dict[str, Any],
        conversation_id: str,
        turn_id: str,
        text: str,
        seconds: float,
    ) -> None:
        record = after["turns"][turn_id]
        evicted = after.get("truncation", {}).get("evictedMessages", 0) - before.get("truncation", {}).get(
            "evictedMessages", 0
        )
        error = record.get("error") or (after.get("capacityError") if not before.get("capacityError") else None)
        telemetry().record_turn(
            agent=self.agent_name,
            conversation_id=conversation_id,
            turn_id=turn_id,
            outcome=record["status"],
            error_code=(error or {}).get("code"),
            seconds=seconds,
            state_bytes=len(text.encode("utf-8")),
            mode=after.get("retention", {}).get("mode", "auto"),
            evicted=evicted,
        )

    def run_turn(
        self,
        state: dict[str, Any],
        conversation_id: str,
        turn_id: str,
        request: dict[str, Any],
        *,
        stored_bytes: int | None = None,
    ) -> dict[str, Any]:
        """Run one turn against a copy of `state` and return the new state (with its turn record).

        `stored_bytes` is the size of `state` as stored, when known, so the budget check need not re-encode it.
        """
        now = self.clock.now_ms()
        key = request.get("idempotencyKey")
        earlier = find_keyed_turn(state, key) if key else None
        new = copy.copy(state)
        if earlier is not None:
            # A retry with a known Idempotency-Key: answer from the original turn, never call the model again.
            original_id, original = earlier
            if original.get("requestHash") == request.get("requestHash"):
                record = alias_record(original_id, now)
            else:
                record = failed_record(IdempotencyConflictError(key, original_id).to_record(), now)
        else:
            try:
                response, new = self._run_agent(new, conversation_id, turn_id, request, stored_bytes)
            except Exception as exc:
                # Nothing of the failed run is kept: the turn record is the only change (failure record, not str(exc)).
                error = self._turn_error(exc, conversation_id, turn_id)
                record = failed_record(error.to_record(), self.clock.now_ms())
                new = copy.copy(state)
            else:
                record = completed_record(response, self.clock.now_ms(), new["agent"], new.get("messages", []))
            if key:
                record.update(idempotencyKey=key, requestHash=request.get("requestHash"))
        now = self.clock.now_ms()
        record_turn(
            new,
            turn_id,
            record,
            max_records=self.max_turn_records,
            ttl_seconds=self.turn_record_ttl_seconds,
            now_ms=now,
        )
        new["updatedAt"] = now
        return new

    def _turn_error(self, exc: Exception, conversation_id: str, turn_id: str) -> AgentHostError:
        """What a failed turn records: our own errors as they are, anything else as a turn failure."""
        if isinstance(exc, AgentHostError):
            return exc
        if isinstance(exc, RunTimeoutError):
            logger.warning("Turn %s of %s/%s was cancelled: %s", turn_id, self.agent_name, conversation_id, exc)
            return TurnFailedError(
                f"The agent run took longer than {exc.timeout:g} s (AGENT_HOST_RUN_TIMEOUT_SECONDS) and was "
                "cancelled. The conversation's earlier history is unchanged; send the next turn to continue."
            )
        logger.exception("Turn %s of %s/%s failed", turn_id, self.agent_name, conversation_id, exc_info=exc)
        return TurnFailedError(
            f"The agent run failed ({type(exc).__name__}). The conversation's earlier history is unchanged; "
            "send the next turn to continue."
        )

    def _run_agent(
        self,
        state: dict[str, Any],
        conversation_id: str,
        turn_id: str,
        request: dict[str, Any],
        stored_bytes: int | None,
    ) -> tuple[AgentResponse, dict[str, Any]]:
        agent = self._agent_copy()
        session = restore_session(agent, session_id_for(self.agent_name, conversation_id), state.get("session"))
        durable = self.plan.durable
        stored: list[dict[str, Any]] = state.get("messages", [])
        if durable is not None:
            history = CONVERSATION_CACHE.history_for(stored, state["agent"])
            session.state[durable.source_id] = {MESSAGES_KEY: history.messages}
        pending = state.get(PENDING_APPROVALS_KEY, [])
        answers = request.get("approvals") or []
        contents: list[Any] = answer_contents(pending, answers)
        if request.get("message"):
            contents.append(request["message"])
        message = Message("user", contents, message_id=f"{turn_id}.in")
        ensure_room_for_turn(state, message_to_record(message, self.clock.now_ms(), state["agent"]), stored_bytes)
        response = AGENT_LOOP.run(agent.run(message, session=session), timeout=self.run_timeout_seconds)
        state[PENDING_APPROVALS_KEY] = remaining_after(pending, answers, pending_from_response(response))
        if not state[PENDING_APPROVALS_KEY]:
            state.pop(PENDING_APPROVALS_KEY)

        now = self.clock.now_ms()
        if durable is not None:
            buffer: list[Message] = session.state[durable.source_id].get(MESSAGES_KEY, [])
            assign_transcript_ids(buffer)
            state["messages"] = reconcile_by_message_id(
                stored, buffer, now, agent_name=state["agent"], reuse=history.record_for
            )
            if TURNS_KEY in state:
                state[TURNS_KEY] = keep_delivered_answers(state[TURNS_KEY], stored, state["messages"])
        # Summaries call-level compaction put in the response stay in the transcript only (failure 5).
        response = delivered_response(response, turn_id)
        state["session"] = snapshot_session(
            session,
            derived_source_id=durable.source_id if durable is not None else None,
            last_good=state.get("session"),
        )
        if state["session"] is None:
            state.pop("session")
        state["turnCount"] = state.get("turnCount", 0) + 1
        return response, state

    def _load_state(self, context: df.DurableEntityContext, raw: str | None) -> dict[str, Any]:
        """The stored conversation (refused if unreadable), or a new one with this agent's default retention."""
        if raw is None:
            return new_state(self.agent_name, context.entity_key, self.retention, self.clock.now_ms())
        return CONVERSATION_CACHE.decode(self.agent_name, context.entity_key, raw)

    def _set_retention(self, context: df.DurableEntityContext) -> None:
        # Validated here too: the entity is the authority, whoever signals it.
        settings = validated_retention(context.get_input())
        state = self._load_state(context, read_raw_state(context))
        updated = apply_retention_settings(state, settings, self.clock.now_ms())
        write_raw_state(context, encode_state(updated))
        context.set_result({"retention": updated["retention"]})

    def _agent_copy(self) -> SupportsAgentRun:
        # Core appends providers to the agent it runs (and may change its options): run a shallow copy with
        # its own provider list and options, so the caller's agent object is never mutated.
        agent = copy.copy(self.agent)
        if isinstance(agent, Agent) or hasattr(agent, "context_providers"):
            agent.context_providers = list(self.plan.providers)  # type: ignore[attr-defined]
        if isinstance(getattr(agent, "default_options", None), dict):
            agent.default_options = dict(agent.default_options)  # type: ignore[attr-defined]
        return agent


def read_raw_state(context: df.DurableEntityContext) -> str | None:
    """The state string exactly as the host stored it, without the SDK's generic decoding."""
    if getattr(context, "_state_is_raw", False):
        return context._state  # type: ignore[no-any-return]
    state = context.get_state()
    return state if isinstance(state, str) or state is None else encode_state(state)


def write_raw_state(context: df.DurableEntityContext, text: str) -> None:
    """Hand the host our own encoding; `set_state` would encode the string a second time."""
    context.set_state(text)
    if hasattr(context, "_state_is_raw"):
        context._state_is_raw = True
