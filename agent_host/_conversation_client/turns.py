"""Taking a turn: the one way every front end (the turns route, `/run`, an agent's MCP tool) runs a turn.

`take_turn` answers a retry of an idempotency key from the turn that ran for it, checks approval answers, signals
the entity's `run` operation, starts the conversation's expiry watch, and waits if asked; it returns a closed
`TurnOutcome` each front end renders in its own shape. Request errors (a reused key asking something else, answers
to approvals that are not pending, a key whose turn expired) raise `AgentHostError`s, as every request error does.
Knows the conversation client and read model; nothing of HTTP or MCP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._clock import Clock
from .._contract import RUN_OPERATION, CancelKeep, IfBusy
from .._conversation.approvals import check_answers
from .._conversation.turn_receipts import new_turn_id, request_hash
from .._conversation.view import ConversationView, TurnView
from .._errors import (
    AgentHostError,
    BusyRuleUnavailableError,
    ConversationBusyError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    TurnExpiredError,
    internal_error,
)
from .._streaming.store_errors import StreamStoreUnavailableError
from .client import ConversationClient
from .in_flight import InFlight

APPROVALS_FIELD = "approvals"


_NO_STORE = "this app has no turn stream store to keep that order in"
_NO_STORE_REMEDY = (
    'Give the app one (AGENT_HOST_STREAM_STORE, docs/streaming-stores.md), or send "ifBusy": "enqueue", which runs '
    "the turn after the turns in flight."
)


@dataclass(frozen=True)
class TurnAsk:
    """What a front end asks of one turn.

    Attributes:
        conversation_id: The conversation.
        request: The `run` operation's fields that say what the turn asks (message, contents, approvals, role,
            responseFormat, options, ...); a retry of an idempotency key must ask the same.
        idempotency_key: The request's key, or None; a keyed turn's id derives from it.
        caller_key: Whether the caller chose the key (only then can an earlier request have used it).
        stream: Whether the entity writes the turn's events as it runs.
        wait_seconds: How long to wait for the turn to settle; None answers as soon as it is signalled.
        if_busy: What the turn does to turns of the conversation in flight: `enqueue` (run after them), `reject`
            (refused), `interrupt` (they stop at their next step keeping their partial answers) or `rollback` (they
            stop keeping nothing).
    """

    conversation_id: str
    request: dict[str, Any]
    idempotency_key: str | None = None
    caller_key: bool = True
    stream: bool = False
    wait_seconds: float | None = None
    if_busy: IfBusy = "enqueue"


@dataclass(frozen=True)
class Answered:
    """The turn completed: its receipt, and the conversation that holds it."""

    turn: TurnView
    conversation: ConversationView


@dataclass(frozen=True)
class Failed:
    """The turn ran and failed: its receipt says why."""

    turn: TurnView
    conversation: ConversationView

    @property
    def error(self) -> dict[str, str]:
        """Why the turn failed: a stable code and a message (every failed receipt keeps one)."""
        return self.turn.error or internal_error().to_record()


@dataclass(frozen=True)
class Accepted:
    """The turn was signalled and not waited for."""

    turn_id: str


@dataclass(frozen=True)
class Pending:
    """The turn was waited for and has not settled yet."""

    turn_id: str


@dataclass(frozen=True)
class Gone:
    """The turn settled, but its receipt cannot be read: deleted with its conversation, or expired."""

    turn_id: str
    error: AgentHostError


TurnOutcome = Answered | Failed | Accepted | Pending | Gone


async def take_turn(
    conversations: ConversationClient, ask: TurnAsk, clock: Clock, in_flight: InFlight | None
) -> TurnOutcome:
    """Run one turn as `ask` says, once however often its key is retried.

    `in_flight` lists the turn among the conversation's turns in flight before it is signalled, for `ask.if_busy`
    and for later turns' and cancels (None without a turn stream store: only `enqueue` turns are then taken).

    Raises:
        ConversationBusyError: `ifBusy` is `reject` and a turn of the conversation is in flight.
        BusyRuleUnavailableError: `ifBusy` is not `enqueue` and the turn stream store failed or there is none;
            nothing was taken.
        IdempotencyConflictError: the key's turn asked something else.
        TurnExpiredError: the key's turn ran, but its receipt is no longer kept.
        ApprovalAnsweredError, UnknownApprovalError: an approval answer names no pending request.
        ApprovalExpiredError: an approval answer names a request whose lifetime has passed.
        StorageUnavailableError, StateCorruptError: the conversation could not be read or signalled.
    """
    conversation_id, key = ask.conversation_id, ask.idempotency_key
    request = dict(ask.request)
    digest = request_hash(request) if key is not None else None
    approvals = request.get(APPROVALS_FIELD)
    if in_flight is None and ask.if_busy != "enqueue":
        # Without a store nothing orders the turns in flight: refusing is honest, enqueueing would ignore the ask.
        raise BusyRuleUnavailableError(conversation_id, ask.if_busy, _NO_STORE, [], remedy=_NO_STORE_REMEDY)
    busy_rule = in_flight is not None and ask.if_busy != "enqueue"
    reads_first = (key is not None and ask.caller_key) or bool(approvals) or busy_rule
    state = await conversations.read(conversation_id) if reads_first else None
    live = state if state is not None and not state.is_deleted else None
    if key is not None and live is not None:
        earlier = live.keyed_turn(key)
        if earlier is not None:
            # A client retry: the same turn and answer, without running the model (or checking its approvals,
            # which that turn answered) again.
            return _settled(conversations.agent_name, ask, live, earlier.turn_id, digest)
        expired = live.expired_keyed_turn(key)
        if expired is not None:
            raise TurnExpiredError(conversation_id, expired)
    if key is not None:
        request.update(idempotencyKey=key, requestHash=digest)
    if approvals:
        # The entity checks too; checking here refuses a wrong id as a request error instead of a failed turn.
        known = live or ConversationView.empty()
        check_answers(
            known.pending_approvals_by_id,
            approvals,
            known.answered_approvals(),
            known.expired_approvals(clock.now_ms()),
        )
    turn_id = new_turn_id(clock.now_ms(), key)
    listed = in_flight is not None and await _take_place(in_flight, ask, state or ConversationView.empty(), turn_id)
    try:
        operation = {"turnId": turn_id, **request}
        imported = await conversations.history_to_import(conversation_id, clock.now_ms())
        if imported is not None:
            operation["imported"] = imported
        if ask.stream:
            operation["stream"] = True
        await conversations.signal(conversation_id, RUN_OPERATION, operation)
    except BaseException:
        if listed and in_flight is not None:
            # The caller is told the turn was not taken (503), so it must not keep the conversation busy.
            await in_flight.try_withdraw(turn_id)
        raise
    expiry = conversations.watch_expiry(conversation_id, clock)
    if ask.wait_seconds is None:
        await expiry.finish()
        return Accepted(turn_id)
    settled = await conversations.wait_for_turn(conversation_id, turn_id, ask.wait_seconds)
    await expiry.finish(settled.turn_count if settled is not None else None)
    if settled is None:
        return Pending(turn_id)
    return _settled(conversations.agent_name, ask, settled, turn_id, digest)


async def _take_place(in_flight: InFlight, ask: TurnAsk, state: ConversationView, turn_id: str) -> bool:
    """List the turn among the conversation's turns in flight before it is signalled, and apply `ask.if_busy` to the
    turns listed ahead of it: refuse the new turn, or ask them to stop (the new turn then queues behind them and runs
    once they stopped). Returns whether the turn was listed.

    The list's order decides, not what a read saw before it: two turns that both found the conversation idle are
    both listed, and the later one then sees the earlier ahead of it (and withdraws, if it rejects), so of turns
    racing for an idle conversation exactly one is taken. An `enqueue` turn whose listing fails runs unlisted (logged);
    any other mode needs the list, and a store that fails refuses the turn.

    Raises:
        ConversationBusyError: `reject`, and a turn is in flight; nothing was stored.
        BusyRuleUnavailableError: the store could not be read or written; the turn was not taken.
    """
    if ask.if_busy == "enqueue":
        return await in_flight.try_accept(turn_id)
    asked_to_stop: list[str] = []
    try:
        if ask.if_busy == "reject":
            busy = await in_flight.turns(state)  # refused without writing anything, the usual busy conversation
            if busy:
                raise ConversationBusyError(ask.conversation_id, busy)
        place = await in_flight.controls.accept(turn_id)
        try:
            busy = await in_flight.turns(state, before=place)
            if busy and ask.if_busy == "reject":
                raise ConversationBusyError(ask.conversation_id, busy)
            keep: CancelKeep = "partial" if ask.if_busy == "interrupt" else "nothing"
            for earlier in busy:
                await in_flight.controls.request_cancel(earlier, keep)
                asked_to_stop.append(earlier)
        except BaseException:
            await in_flight.try_withdraw(turn_id)
            raise
    except StreamStoreUnavailableError as exc:
        raise BusyRuleUnavailableError(ask.conversation_id, ask.if_busy, exc.failure, asked_to_stop) from exc
    return True


def _settled(
    agent_name: str, ask: TurnAsk, state: ConversationView, turn_id: str, digest: str | None
) -> Answered | Failed | Gone:
    """The outcome of a turn the state settles.

    Raises:
        IdempotencyConflictError: the key's turn asked something else.
    """
    turn = state.turn(turn_id)
    if turn is None:
        if state.is_deleted:
            return Gone(turn_id, ConversationNotFoundError(agent_name, ask.conversation_id, deleted=True))
        return Gone(turn_id, TurnExpiredError(ask.conversation_id, turn_id))
    if ask.idempotency_key is not None and turn.request_hash != digest:
        raise IdempotencyConflictError(ask.idempotency_key, turn.turn_id)
    # A cancelled turn answers with what it kept (its status says it was cancelled).
    return Failed(turn, state) if turn.error is not None else Answered(turn, state)
