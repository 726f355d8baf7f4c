"""The conversation entity: one operation runs one turn on a copy of the agent and commits it. Knows nothing of HTTP.

An operation builds the new state aside and commits it only at the end: a raised exception marks the operation
failed, but the host does not roll back in-place changes, so nothing is written until everything succeeded.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from agent_framework import Agent, AgentResponse, Content, Message, SupportsAgentRun
from agent_framework.observability import OtelAttr
from pydantic import BaseModel

from .._approval_ttl import APPROVAL_TTL_OFF
from .._clock import SYSTEM_CLOCK, Clock
from .._contract import (
    CANCEL_OPERATION,
    DELETE_OPERATION,
    ENTITY_OPERATIONS,
    EXPIRE_OPERATION,
    RUN_OPERATION,
    SET_RETENTION_OPERATION,
    CancelOperation,
    ChangeOperation,
    ExpireOperation,
    ImportedConversation,
    RunOperation,
    SetRetentionOperation,
    parse_model,
)
from .._deps.durable_private import holds_raw_state, mark_entity_state_raw, raw_entity_state
from .._errors import AgentHostError, InvalidRequestError, TurnFailedError
from .._event_loop import AGENT_LOOP, RunTimeoutError
from .._records import message_to_record
from .._retention_settings import RetentionSettings
from .._streaming.callbacks import AgentCallbackContext, AgentResponseCallbackProtocol
from .._streaming.channel import TurnStreamStore, stream_key
from .._streaming.journal import TurnJournal, journal_key
from .._streaming.turn_controls import TurnControls
from .._structured_output import structured_value
from .._telemetry import telemetry
from .._tracing import TURN_ID_ATTRIBUTE, operation_span
from .approvals import (
    answer_contents,
    answered_approvals,
    expired_approvals,
    expiry_declines,
    lapsed_approvals,
    pending_from_response,
    public_view,
    remaining_after,
)
from .cancellation import TurnCancellation, TurnCancelledError
from .checkpoints import TurnCheckpoints, list_journal, settled_journals
from .expiry import EXPIRED, UNREADABLE, expiry_change_id, expiry_verdict, report_expiry, report_unreadable
from .history import (
    BUFFER_KEY,
    assign_transcript_ids,
    delivered_response,
    reconcile_by_message_id,
    rename_clashing_summaries,
)
from .history_plan import HistoryPlan
from .replies import expired_result, run_result
from .retention import ReceiptPolicy, apply_retention_settings, make_room_for_turn, retain_after_turn
from .sessions import restore_session, session_id_for, snapshot_session
from .state import (
    AGENT_KEY,
    APPLIED_CHANGES_KEY,
    APPLIED_DELETES_KEY,
    CAPACITY_ERROR_KEY,
    CONVERSATION_ID_KEY,
    CREATED_AT_KEY,
    DELETED_KEY,
    EXPIRED_APPROVALS_KEY,
    EXPIRED_TURNS_KEY,
    IMPORTED_FROM_KEY,
    JOURNALED_TURNS_KEY,
    MESSAGES_KEY,
    OWNER_KEY,
    PENDING_APPROVALS_KEY,
    RETENTION_KEY,
    SESSION_KEY,
    STATE_BYTES_KEY,
    STRUCTURED_KEY,
    TRUNCATION_KEY,
    TURN_COUNT_KEY,
    TURNS_KEY,
    UPDATED_AT_KEY,
    StoredState,
    decode_state,
    encode_state,
    has_applied_delete,
    is_deleted,
    new_state,
    with_applied_change,
    with_applied_delete,
)
from .state_cache import CONVERSATION_CACHE
from .streamed_turn import StreamedTurn
from .turn_failures import describe_failure
from .turn_receipts import (
    DEFAULT_MAX_TURN_RECORDS,
    DEFAULT_TURN_RECORD_TTL_SECONDS,
    cancelled_receipt,
    completed_receipt,
    expired_keyed_turn,
    failed_receipt,
    find_keyed_turn,
    find_turn,
    keep_delivered_answers,
    record_receipt,
)

if TYPE_CHECKING:
    # For annotations only: the SDK loads azure.functions, which the entity itself never touches.
    import azure.durable_functions as df

logger = logging.getLogger("agent_host.entity")

StreamStoreLookup = Callable[[], TurnStreamStore | None]
"""Where turn streams are written: resolved when a turn first needs it; None when no store is configured."""
# Deleting the streams of dropped receipts is best effort and must not hold up the operation for long.
STREAM_DELETE_TIMEOUT_SECONDS = 10.0

ModelT = TypeVar("ModelT", bound=BaseModel)


class ConversationEntityFunction:
    """Runs the operations of one agent's conversation entities.

    Args:
        agent_name: The registered agent name (the entity's agent).
        agent: The caller's agent; never mutated, each turn runs on a shallow copy.
        plan: Who keeps the agent's history (decided at registration).
        retention: Default retention for new conversations.
        max_turn_records: How many turn records each conversation keeps for its callers.
        turn_record_ttl_seconds: How long a turn record is kept for its callers.
        run_timeout_seconds: How long one agent run may take before the turn fails.
        clock: Where the time of records, TTLs and evictions comes from.
        stream_store: Where streamed turns write their streams (resolved on first use); None for nowhere.
        callback: Called with each update and the answer of every turn of this agent (which then runs streaming).
        turn_error_details: Say in a failed turn's error why it failed (the exception's kind and text, secrets taken
            out); otherwise its type alone, and the details only in the log. `AGENT_HOST_TURN_ERROR_DETAILS`.
        approval_ttl_seconds: How long a tool approval a turn asks for waits for its answer before the next turn
            declines it (0: until answered); a turn's `approval_ttl_seconds` overrides it.
        checkpoints: Journal each model response and tool result of a turn in the stream store, and replay them
            when the turn runs again (`checkpoints.py`). `AGENT_HOST_CHECKPOINTS`, `add_agent(checkpoints=...)`.
    """

    def __init__(
        self,
        agent_name: str,
        agent: SupportsAgentRun,
        *,
        plan: HistoryPlan,
        retention: RetentionSettings,
        max_turn_records: int = DEFAULT_MAX_TURN_RECORDS,
        turn_record_ttl_seconds: float = DEFAULT_TURN_RECORD_TTL_SECONDS,
        run_timeout_seconds: float = 230.0,
        clock: Clock = SYSTEM_CLOCK,
        stream_store: StreamStoreLookup | None = None,
        callback: AgentResponseCallbackProtocol | None = None,
        turn_error_details: bool = False,
        approval_ttl_seconds: float = APPROVAL_TTL_OFF,
        checkpoints: bool = True,
    ) -> None:
        self.agent_name = agent_name
        self.agent = agent
        self.plan = plan
        self.retention = retention
        self.max_turn_records = max_turn_records
        self.turn_record_ttl_seconds = turn_record_ttl_seconds
        self.run_timeout_seconds = run_timeout_seconds
        self.clock = clock
        self.stream_store = stream_store
        self.callback = callback
        self.turn_error_details = turn_error_details
        self.approval_ttl_seconds = approval_ttl_seconds
        self.checkpoints = checkpoints

    def __call__(self, context: df.DurableEntityContext) -> None:
        """The entity function body: dispatch one operation of the host's batch."""
        operation = context.operation_name
        if operation == RUN_OPERATION:
            self._run(context)
        elif operation == DELETE_OPERATION:
            self._delete(context)
        elif operation == SET_RETENTION_OPERATION:
            self._set_retention(context)
        elif operation == EXPIRE_OPERATION:
            self._expire(context)
        elif operation == CANCEL_OPERATION:
            self._cancel(context)
        else:
            raise InvalidRequestError(
                f"Unknown entity operation '{operation}'; expected one of {', '.join(ENTITY_OPERATIONS)}.",
                code="unknown_operation",
            )

    def _run(self, context: df.DurableEntityContext) -> None:
        request = _operation_input(context, RunOperation)
        attributes = {
            OtelAttr.AGENT_NAME: self.agent_name,
            OtelAttr.CONVERSATION_ID: context.entity_key,
            TURN_ID_ATTRIBUTE: request.turn_id,
        }
        # The caller's trace, restored per operation from its own input: a batch's operations, and a redelivered
        # one, each parent under their own caller; the agent runs inside it, so core's spans are its children.
        with operation_span(f"{RUN_OPERATION} {context.entity_name}", request.trace_context, attributes):
            self._take_turn(context, request)

    def _take_turn(self, context: df.DurableEntityContext, request: RunOperation) -> None:
        turn_id = request.turn_id
        raw = read_raw_state(context)
        state, stored_bytes = self._load_state(context, raw)
        if turn_id in state.get(TURNS_KEY, {}):
            # Signals arrive at least once: a known turn id returns its recorded result (architecture.md, failure 9).
            context.set_result(run_result(state, turn_id, reply=request.reply, duplicate=True))
            return
        if turn_id in state.get(EXPIRED_TURNS_KEY, ()):
            # Its record aged out, but the turn ran: a late redelivery must not run the model again
            # (architecture.md, failure 9).
            context.set_result(expired_result(turn_id))
            return
        earlier = find_keyed_turn(state, request.idempotency_key) if request.idempotency_key else None
        if earlier is not None:
            # A retry of an Idempotency-Key already answered: its caller reads the original turn; nothing is
            # written, so no number of retries can push the original's record out (architecture.md, failure 15).
            context.set_result(run_result(state, earlier[0], reply=request.reply, duplicate=True))
            return
        expired = expired_keyed_turn(state, request.idempotency_key) if request.idempotency_key else None
        if expired is not None:
            # The key's turn ran and its receipt is gone: the retry reads 410, the model does not run again.
            context.set_result(expired_result(expired))
            return
        owned = _owned(state, stored_bytes, request.owner)
        if owned is None:
            # Another principal's first turn raced this one to a new id: the conversation is not theirs to change.
            logger.warning(
                "Turn %s of conversation %s refused: another principal owns it.", turn_id, context.entity_key
            )
            return
        state = owned
        if raw is None and request.imported is not None:
            # Only a conversation never stored here starts from the published host's history: a deleted one left
            # a tombstone, and its next turn starts empty as the deletion asked.
            state = self._with_imported(state, request.imported)
        started = time.perf_counter()
        streamed = self._streamed_turn(context, request)
        settled = settled_journals(context, state)
        cancellation = self._cancellation(context, turn_id)
        if cancellation is not None and cancellation.keep is not None:
            # Cancelled before this attempt: it does not run (again, after a crash; docs/exactly-once.md).
            record = cancelled_receipt(self.clock.now_ms(), cancellation.keep, ran=cancellation.started_before)
            committed = self._with_record(copy.copy(state), request, record, stored_bytes)
            checkpoints = None
        else:
            checkpoints = self._turn_checkpoints(context, request)
            committed = self.run_turn(
                state,
                context.entity_key,
                request,
                stored_bytes=stored_bytes,
                streamed=streamed,
                cancellation=cancellation,
                checkpoints=checkpoints,
            )
        list_journal(context, committed, turn_id, journaled=checkpoints is not None, settled=settled)
        committed, text = retain_after_turn(
            committed,
            committed[TURNS_KEY][turn_id],
            now_ms=self.clock.now_ms(),
            text=CONVERSATION_CACHE.encode(self.agent_name, context.entity_key, committed),
            receipts=self._receipts(turn_id),
        )
        self._delete_streams(context, set(state.get(TURNS_KEY, {})).difference(committed[TURNS_KEY]), settled)
        CONVERSATION_CACHE.remember(self.agent_name, context.entity_key, committed, text)
        write_raw_state(context, text)
        context.set_result(run_result(committed, turn_id, reply=request.reply))
        self._record_telemetry(state, committed, context.entity_key, turn_id, text, time.perf_counter() - started)

    def _with_imported(self, state: StoredState, imported: ImportedConversation) -> StoredState:
        """A new conversation holding the imported messages, checked against the schema like any stored state.

        Raises:
            StateCorruptError: a record does not match the schema (nothing is written).
        """
        source = {**imported.source, "at": self.clock.now_ms()}
        return decode_state({**state, MESSAGES_KEY: list(imported.messages), IMPORTED_FROM_KEY: source})

    def _receipts(self, turn_id: str | None) -> ReceiptPolicy:
        return ReceiptPolicy(max_records=self.max_turn_records, protected_turn=turn_id)

    def _streamed_turn(self, context: df.DurableEntityContext, request: RunOperation) -> StreamedTurn | None:
        """How a turn is watched while it runs, or None when nobody watches it (it then runs without streaming)."""
        store = self.stream_store() if request.stream and self.stream_store is not None else None
        if store is None and self.callback is None:
            return None
        return StreamedTurn(
            turn_id=request.turn_id,
            stream=stream_key(context.entity_name, context.entity_key, request.turn_id),
            store=store,
            callback=self.callback,
            # The agent's own name, as agent-framework-azurefunctions gives it (a workflow node's entity is named
            # for the node).
            context=AgentCallbackContext(
                getattr(self.agent, "name", None) or self.agent_name,
                request.turn_id,
                context.entity_key,
                request.message,
            ),
        )

    def _cancellation(self, context: df.DurableEntityContext, turn_id: str) -> TurnCancellation | None:
        """The turn's cancel checks, started (`keep` set when it was cancelled while queued); None without a store,
        or when the store cannot be reached: the turn then runs as one nobody can cancel (logged)."""
        store = self.stream_store() if self.stream_store is not None else None
        if store is None:
            return None
        cancellation = TurnCancellation(TurnControls(store, context.entity_name, context.entity_key), turn_id)
        try:
            AGENT_LOOP.run(cancellation.start(), timeout=STREAM_DELETE_TIMEOUT_SECONDS)
        except Exception as exc:
            logger.warning("Turn %s cannot be cancelled: its store failed: %s", turn_id, f"{exc}"[:300])
            return None
        return cancellation

    def _turn_checkpoints(self, context: df.DurableEntityContext, request: RunOperation) -> TurnCheckpoints | None:
        """The journal of this run of the turn, or None when the agent runs without checkpoints."""
        if not self.checkpoints:
            return None
        store = self.stream_store() if self.stream_store is not None else None
        if store is None:
            telemetry().record_checkpoint_unavailable(agent=self.agent_name, reason="no_store")
            return None
        key = journal_key(stream_key(context.entity_name, context.entity_key, request.turn_id))
        return TurnCheckpoints(TurnJournal(store, key), self.agent_name)

    def _delete_streams(
        self,
        context: df.DurableEntityContext,
        turn_ids: Iterable[str],
        journals_of: Iterable[str] = (),
        *,
        conversation: bool = False,
    ) -> None:
        """Delete the streams of turns whose receipts are gone, their controls (the conversation's own with it), and
        the journals of `journals_of`; best effort, as a missing stream is replayed from its receipt, a stream without
        a receipt is never read, and a journal left behind is read by no turn (a turn with a receipt never runs again).

        Only journals of turns an earlier batch committed are deleted (`settled_journals`): until the host has
        committed this batch, a crash may still run its turns again.
        """
        ordered = sorted(turn_ids)
        streams = [stream_key(context.entity_name, context.entity_key, turn_id) for turn_id in ordered]
        streams += [journal_key(stream_key(context.entity_name, context.entity_key, turn)) for turn in journals_of]
        store = self.stream_store() if (streams or conversation) and self.stream_store is not None else None
        if store is None:
            return
        controls = TurnControls(store, context.entity_name, context.entity_key)
        streams += controls.turn_streams(ordered) + (controls.conversation_streams() if conversation else [])
        try:
            AGENT_LOOP.run(store.delete(streams), timeout=STREAM_DELETE_TIMEOUT_SECONDS)
        except Exception as exc:
            logger.warning(
                "Could not delete %d turn stream(s) of %s/%s: %s",
                len(streams),
                self.agent_name,
                context.entity_key,
                f"{type(exc).__name__}: {exc}"[:300],
            )

    def _record_telemetry(
        self,
        before: StoredState,
        after: StoredState,
        conversation_id: str,
        turn_id: str,
        text: str,
        seconds: float,
    ) -> None:
        record = after[TURNS_KEY][turn_id]

        def evicted(state: StoredState) -> int:
            return int(state.get(TRUNCATION_KEY, {}).get("evictedMessages", 0))

        new_capacity_error = after.get(CAPACITY_ERROR_KEY) if not before.get(CAPACITY_ERROR_KEY) else None
        error = record.get("error") or new_capacity_error
        telemetry().record_turn(
            agent=self.agent_name,
            conversation_id=conversation_id,
            turn_id=turn_id,
            outcome=record["status"],
            error_code=(error or {}).get("code"),
            seconds=seconds,
            state_bytes=len(text.encode("utf-8")),
            mode=after.get(RETENTION_KEY, {}).get("mode", "auto"),
            evicted=evicted(after) - evicted(before),
        )

    def run_turn(
        self,
        state: StoredState,
        conversation_id: str,
        request: RunOperation,
        *,
        stored_bytes: int | None = None,
        streamed: StreamedTurn | None = None,
        cancellation: TurnCancellation | None = None,
        checkpoints: TurnCheckpoints | None = None,
    ) -> StoredState:
        """Run one turn against a copy of `state` and return the new state (with its turn record).

        `stored_bytes` is the size of `state` as stored, when known, so the budget check need not re-encode it;
        `streamed` says who watches the turn run (it then runs streaming), when anybody does; `cancellation` stops
        it at a step boundary once it is cancelled; `checkpoints` journals and replays its steps.
        """
        # Approvals past their lifetime are declined by this turn, as the caller would decline them; a turn that
        # fails keeps nothing, so they stay pending (and expired) for the next one.
        lapsed = lapsed_approvals(state.get(PENDING_APPROVALS_KEY, []), self.clock.now_ms())
        try:
            response, new = self._run_agent(
                copy.copy(state), conversation_id, request, stored_bytes, streamed, lapsed, cancellation, checkpoints
            )
        except TurnCancelledError:
            # Cancelled, keeping nothing: as with a failure, the receipt is the only change.
            record = cancelled_receipt(self.clock.now_ms(), "nothing", ran=True)
            new = copy.copy(state)
        except Exception as exc:
            # Nothing of the failed run is kept: the turn record is the only change (failure record, not str(exc)).
            error = self._turn_error(exc, conversation_id, request.turn_id)
            sent = request.message or _last_text(request.messages)
            approvals = [answer.model_dump() for answer in request.approvals]
            record = failed_receipt(error.to_record(), self.clock.now_ms(), sent, approvals)
            new = copy.copy(state)
        else:
            mismatch = _structured_output_mismatch(response, request.response_format)
            if mismatch is not None:
                # The model answered, just not as asked: the answer stays in the history, the turn fails.
                record = failed_receipt(mismatch.to_record(), self.clock.now_ms())
            else:
                record = completed_receipt(
                    response,
                    self.clock.now_ms(),
                    new[AGENT_KEY],
                    new.get(MESSAGES_KEY, []),
                    new.get(PENDING_APPROVALS_KEY, []),
                )
                if request.response_format is not None:
                    record[STRUCTURED_KEY] = True
            if lapsed:
                record[EXPIRED_APPROVALS_KEY] = public_view(lapsed)
            if cancellation is not None and cancellation.keep is not None:
                record = cancelled_receipt(self.clock.now_ms(), cancellation.keep, ran=True, kept=record)
        return self._with_record(new, request, record, stored_bytes)

    def _with_record(
        self, new: StoredState, request: RunOperation, record: dict[str, Any], stored_bytes: int | None
    ) -> StoredState:
        """`new` with the turn's receipt recorded (bounded by count and age)."""
        if request.idempotency_key:
            record.update(idempotencyKey=request.idempotency_key, requestHash=request.request_hash)
        if stored_bytes is not None:
            # Known for free (the stored string's length): the receipts then chart the state's size turn by turn.
            record[STATE_BYTES_KEY] = stored_bytes
        now = self.clock.now_ms()
        record_receipt(
            new,
            request.turn_id,
            record,
            max_records=self.max_turn_records,
            ttl_seconds=self.turn_record_ttl_seconds,
            now_ms=now,
        )
        new[UPDATED_AT_KEY] = now
        return new

    def _turn_error(self, exc: Exception, conversation_id: str, turn_id: str) -> AgentHostError:
        """What a failed turn records: our own errors as they are, anything else as a turn failure."""
        if isinstance(exc, AgentHostError):
            return exc
        if isinstance(exc, RunTimeoutError):
            logger.warning("Turn %s of %s/%s was cancelled: %s", turn_id, self.agent_name, conversation_id, exc)
            return TurnFailedError(
                f"The agent run took longer than {exc.timeout:g} s (AGENT_HOST_RUN_TIMEOUT_SECONDS) and was cancelled."
            )
        logger.exception("Turn %s of %s/%s failed", turn_id, self.agent_name, conversation_id, exc_info=exc)
        if self.turn_error_details:
            return TurnFailedError(f"The agent run failed: {describe_failure(exc)}.")
        return TurnFailedError(f"The agent run failed ({type(exc).__name__}).")

    def _run_agent(
        self,
        state: StoredState,
        conversation_id: str,
        request: RunOperation,
        stored_bytes: int | None,
        streamed: StreamedTurn | None,
        lapsed: list[dict[str, Any]],
        cancellation: TurnCancellation | None = None,
        checkpoints: TurnCheckpoints | None = None,
    ) -> tuple[AgentResponse, StoredState]:
        pending = state.get(PENDING_APPROVALS_KEY, [])
        answers = [answer.model_dump() for answer in request.approvals]
        received = self.clock.now_ms()
        if answers:
            messages = state.get(MESSAGES_KEY, [])
            answered, expired = answered_approvals(messages), expired_approvals(lapsed, messages, received)
            contents = answer_contents(pending, answers, answered, expired)
        else:
            contents = []
        inputs = _turn_inputs(request, [*expiry_declines(lapsed), *contents])
        incoming = [message_to_record(message, received, state[AGENT_KEY]) for message in inputs]
        state = make_room_for_turn(state, {MESSAGES_KEY: incoming}, self._receipts(None), stored_bytes)

        agent = self._agent_copy(tools=request.enable_tool_calls)
        if cancellation is not None:
            cancellation.install(agent)
        if checkpoints is not None:
            checkpoints.install(agent)
        session = restore_session(agent, session_id_for(self.agent_name, conversation_id), state.get(SESSION_KEY))
        durable = self.plan.durable
        stored: list[dict[str, Any]] = state.get(MESSAGES_KEY, [])
        if durable is not None:
            history = CONVERSATION_CACHE.history_for(stored, state[AGENT_KEY])
            session.state[durable.source_id] = {BUFFER_KEY: history.messages}
        run_options = _run_options(request)
        # Core's Agent takes `options=`; the SupportsAgentRun protocol does not, so it is passed only when set.
        options: dict[str, Any] = {"options": run_options} if run_options else {}
        run = (
            agent.run(inputs, session=session, **options)
            if streamed is None
            else streamed.run(agent, inputs, session=session, **options)
        )
        response = AGENT_LOOP.run(run, timeout=self.run_timeout_seconds)
        if cancellation is not None:
            # The commit is the last step boundary: a cancel that arrived during the last step stops the turn here.
            AGENT_LOOP.run(cancellation.check(), timeout=STREAM_DELETE_TIMEOUT_SECONDS)
            cancellation.settle(response)
        now = self.clock.now_ms()
        # A request's lifetime starts when the caller is told of it: when the run that asked ends.
        ttl = self.approval_ttl_seconds if request.approval_ttl_seconds is None else request.approval_ttl_seconds
        expires_at = now + round(ttl * 1000) if ttl else None
        state[PENDING_APPROVALS_KEY] = remaining_after(
            pending, [*answers, *lapsed], pending_from_response(response, expires_at)
        )
        if not state[PENDING_APPROVALS_KEY]:
            state.pop(PENDING_APPROVALS_KEY)

        if durable is not None:
            buffer: list[Message] = session.state[durable.source_id].get(BUFFER_KEY, [])
            rename_clashing_summaries(buffer, history.lent, request.turn_id)
            assign_transcript_ids(buffer, history.lent)
            state[MESSAGES_KEY] = reconcile_by_message_id(
                stored, buffer, now, agent_name=state[AGENT_KEY], reuse=history.record_for
            )
            if TURNS_KEY in state:
                state[TURNS_KEY] = keep_delivered_answers(state[TURNS_KEY], stored, state[MESSAGES_KEY])
        # Summaries call-level compaction put in the response stay in the transcript only (architecture.md, failure 5).
        response = delivered_response(response, request.turn_id)
        state[SESSION_KEY] = snapshot_session(
            session,
            derived_source_id=durable.source_id if durable is not None else None,
            last_good=state.get(SESSION_KEY),
        )
        if state[SESSION_KEY] is None:
            state.pop(SESSION_KEY)
        state[TURN_COUNT_KEY] = state.get(TURN_COUNT_KEY, 0) + 1
        return response, state

    def _load_state(self, context: df.DurableEntityContext, raw: str | None) -> tuple[StoredState, int | None]:
        """The stored conversation (refused if unreadable) and its stored size, or a new one (size None) with this
        agent's default retention.

        A deleted conversation's tombstone starts a new conversation. It keeps which deletes ran (so none of them is
        applied to it), but none of the old conversation's changes: a delete's caller finding its id in
        `appliedChanges` of the new conversation would take it for its tombstone (failure 19).
        """
        if raw is None:
            return new_state(self.agent_name, context.entity_key, self.retention, self.clock.now_ms()), None
        state = CONVERSATION_CACHE.decode(self.agent_name, context.entity_key, raw)
        if not is_deleted(state):
            return state, len(raw) if raw.isascii() else len(raw.encode("utf-8"))
        fresh = new_state(self.agent_name, context.entity_key, self.retention, self.clock.now_ms())
        deletes = state.get(APPLIED_DELETES_KEY)
        return ({**fresh, APPLIED_DELETES_KEY: deletes} if deletes else fresh), None

    def _delete(self, context: df.DurableEntityContext, request: ChangeOperation | None = None) -> None:
        """Replace the conversation with a tombstone naming the turns it removes.

        The stored state need not be readable: deleting is the way out of a conversation that cannot be read.
        `request` is given when another operation deletes (expiry); otherwise it is this operation's input.
        """
        request = request or _operation_input(context, ChangeOperation)
        raw = read_raw_state(context)
        if raw is None:
            # Nothing to delete (no turn was queued before this deletion): store nothing, answer nothing.
            context.destruct_on_exit()
            return
        try:
            before = decode_state(raw)
        except AgentHostError:
            before = {}
        if has_applied_delete(before, request.change_id):
            # Redelivered, or retried with the same Idempotency-Key: this delete ran, and a conversation started
            # since is not its to delete (failure 19).
            context.set_result({"deleted": True})
            return
        now = self.clock.now_ms()
        existed = not is_deleted(before)
        tombstone: StoredState = {
            **new_state(self.agent_name, context.entity_key, self.retention, now),
            CREATED_AT_KEY: before.get(CREATED_AT_KEY, now),
            DELETED_KEY: {"at": now, "existed": existed, "turns": _removed_turns(before)},
            APPLIED_CHANGES_KEY: before.get(APPLIED_CHANGES_KEY, []),
            APPLIED_DELETES_KEY: before.get(APPLIED_DELETES_KEY) or [],
        }
        if before.get(OWNER_KEY) is not None:
            tombstone[OWNER_KEY] = before[OWNER_KEY]  # another principal is told of no conversation, not a deleted one
        tombstone = with_applied_delete(tombstone, request.change_id)
        if existed:
            self._delete_streams(
                context, tombstone[DELETED_KEY]["turns"], before.get(JOURNALED_TURNS_KEY, ()), conversation=True
            )
        write_raw_state(context, encode_state(tombstone))
        context.set_result({"deleted": True})

    def _expire(self, context: df.DurableEntityContext) -> None:
        """Delete the conversation if it has been idle for the TTL, exactly as a DELETE does; else say when to look
        again (docs/retention.md, "Idle conversations expire")."""
        request = _operation_input(context, ExpireOperation)
        raw = read_raw_state(context)
        verdict = expiry_verdict(raw, request)
        if verdict.status == EXPIRED:
            self._delete(context, ChangeOperation(change_id=expiry_change_id(request)))
            report_expiry(self.agent_name, context.entity_key, verdict, request)
        elif verdict.status == UNREADABLE:
            report_unreadable(self.agent_name, context.entity_key)
        context.set_result(verdict.result())
        if raw is None:
            context.destruct_on_exit()  # a result marks the entity as existing: a check must not create one

    def _cancel(self, context: df.DurableEntityContext) -> None:
        """Record a turn that has not arrived as cancelled, so it never runs when it does; answer the status of one
        that has. Signals from different callers may arrive out of order, so a cancel can overtake its turn."""
        request = _operation_input(context, CancelOperation)
        raw = read_raw_state(context)
        stored = decode_state(raw) if raw is not None else None
        if stored is not None and is_deleted(stored) and request.turn_id in stored[DELETED_KEY]["turns"]:
            context.set_result({"turnId": request.turn_id, "status": "deleted"})
            return
        state, stored_bytes = self._load_state(context, raw)
        known = find_turn(state, request.turn_id)[1]
        if known is not None or request.turn_id in state.get(EXPIRED_TURNS_KEY, ()):
            context.set_result({"turnId": request.turn_id, "status": known["status"] if known else "expired"})
            return
        record = cancelled_receipt(self.clock.now_ms(), request.keep, ran=False)
        committed = self._with_record(copy.copy(state), RunOperation(turn_id=request.turn_id), record, stored_bytes)
        write_raw_state(context, encode_state(committed))
        context.set_result({"turnId": request.turn_id, "status": "cancelled"})

    def _set_retention(self, context: df.DurableEntityContext) -> None:
        # Validated here too: the entity is the authority, whoever signals it.
        request = _operation_input(context, SetRetentionOperation)
        loaded, stored_bytes = self._load_state(context, read_raw_state(context))
        state = _owned(loaded, stored_bytes, request.owner)
        if state is None:
            logger.warning(
                "Retention change of conversation %s refused: another principal owns it.", context.entity_key
            )
            return
        updated = apply_retention_settings(state, request.retention, self.clock.now_ms())
        updated = with_applied_change(updated, request.change_id)
        write_raw_state(context, encode_state(updated))
        context.set_result({RETENTION_KEY: updated[RETENTION_KEY], CONVERSATION_ID_KEY: context.entity_key})

    def _agent_copy(self, *, tools: bool = True) -> SupportsAgentRun:
        """A shallow copy of the agent to run; without its tools when `tools` is False.

        Core appends providers to the agent it runs (and may change its options): run a shallow copy with its own
        provider list and options, so the caller's agent object is never mutated. A `None` or empty tool list in
        the run's options would be merged away, so a turn without tools runs a copy that has none.
        """
        agent = copy.copy(self.agent)
        if isinstance(agent, Agent) or hasattr(agent, "context_providers"):
            agent.context_providers = list(self.plan.providers)
        if isinstance(getattr(agent, "default_options", None), dict):
            agent.default_options = dict(agent.default_options)  # type: ignore[attr-defined]
            if not tools:
                agent.default_options.pop("tools", None)  # type: ignore[attr-defined]
        if not tools and hasattr(agent, "mcp_tools"):
            agent.mcp_tools = []
        return agent


def _turn_inputs(request: RunOperation, answers: list[Any]) -> list[Message]:
    """The turn's input messages: approval answers and the message (text or contents) as one message in the
    request's role, then any whole messages sent."""
    own: list[Any] = [Content.from_dict(item) for item in request.contents or ()]
    if request.message:
        own.append(request.message)
    contents = [*answers, *own]
    head = (
        [Message(request.role, contents, message_id=f"{request.turn_id}.in")]
        if contents or request.messages is None
        else []
    )
    return [*head, *(Message.from_dict(record) for record in request.messages or ())]


def _last_text(messages: list[dict[str, Any]] | None) -> str | None:
    """The text of the last whole message a workflow's agent node was sent, to show what its failed turn was about."""
    for record in reversed(messages or ()):
        text = Message.from_dict(record).text
        if text:
            return text
    return None


def _run_options(request: RunOperation) -> dict[str, Any]:
    """The options of the turn's `agent.run`: the caller's, the structured output asked for, and no tool calls
    when tools are off (the copy has no tools; this tells the model too)."""
    options = dict(request.options or {})
    if request.response_format is not None:
        options["response_format"] = request.response_format
    if not request.enable_tool_calls:
        options["tool_choice"] = "none"
    return options


def _structured_output_mismatch(
    response: AgentResponse, response_format: dict[str, Any] | None
) -> TurnFailedError | None:
    """Why the answer is not the structured output asked for, or None when it is (or none was asked for)."""
    if response_format is None:
        return None
    try:
        structured_value(response.text, response_format)
    except ValueError as exc:
        return TurnFailedError(
            f"The answer does not match the requested responseFormat: {exc}.", code="invalid_structured_output"
        )
    return None


def _removed_turns(state: StoredState) -> list[str]:
    """The turns a deletion removes: the conversation's, or those an earlier deletion already removed."""
    if is_deleted(state):
        return list(state[DELETED_KEY]["turns"])
    return sorted(state.get(TURNS_KEY, {}))


def _owned(state: StoredState, stored_bytes: int | None, owner: str | None) -> StoredState | None:
    """The state an operation by `owner` may change: a new conversation (no stored size) takes `owner` as its owner;
    a stored one only if `owner` owns it. None when another principal (or nobody) owns it; `owner` None changes any."""
    if owner is None:
        return state
    if stored_bytes is None:
        return {**state, OWNER_KEY: owner}
    return state if state.get(OWNER_KEY) == owner else None


def _operation_input(context: df.DurableEntityContext, model: type[ModelT]) -> ModelT:
    """The operation's input as its contract model; whoever signalled it, the entity checks it."""
    return parse_model(model, context.get_input())


def read_raw_state(context: df.DurableEntityContext) -> str | None:
    """The state string exactly as the host stored it, without the SDK's generic decoding."""
    if holds_raw_state(context):
        return raw_entity_state(context)
    state = context.get_state()
    return state if isinstance(state, str) or state is None else encode_state(state)


def write_raw_state(context: df.DurableEntityContext, text: str) -> None:
    """Hand the host our own encoding; `set_state` would encode the string a second time."""
    context.set_state(text)
    mark_entity_state_raw(context)
