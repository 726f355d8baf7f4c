"""AgentClient: the conversation API over a durabletask `TaskHubGrpcClient`, a synchronous front end like the routes.

The same semantics and errors as the HTTP API's routes (agent_host/_http/routes.py), with Python values for bodies:
a method returns what the route answers with 200 or 202 and raises the `AgentHostError` it answers an error with.
Turns go through `take_turn` and reads through the read model, on `DurableTaskConversationClient`; knows no stored
key, nor how the entity produces what it reads.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from agent_framework import AgentResponse
from durabletask.client import TaskHubGrpcClient

from .._agent_names import entity_name_for
from .._clock import SYSTEM_CLOCK, Clock
from .._contract import (
    AgentRoute,
    RetentionRequest,
    RunReply,
    TurnRequest,
    conversation_id_limit,
    parse_model,
    validate_conversation_id,
    validate_turn_id,
)
from .._conversation.replies import expired_result
from .._conversation.view import ConversationView, TurnView
from .._conversation_client.changes import change_retention, delete_change_id, delete_conversation
from .._conversation_client.in_flight import InFlight, TurnsInFlight
from .._conversation_client.turns import Accepted, Answered, Failed, Gone, Pending, TurnAsk, TurnOutcome, take_turn
from .._errors import (
    AgentHostError,
    AgentNotFoundError,
    ConversationNotFoundError,
    InvalidRequestError,
    MessageTooLargeError,
    TurnExpiredError,
)
from .._event_loop import AgentEventLoop
from .._http.rendering import render_conversation, render_message, render_pending, render_turn
from .._http.requests import IDEMPOTENCY_KEY_PATTERN
from .._http.turn_stream import turn_reader
from .._orchestrations.agent import _message_text
from .._orchestrations.options import WAIT_FOR_RESPONSE, run_options
from .._orchestrations.reply import AgentCall
from .._orchestrations.session import ConversationSession, ConversationSessions
from .._settings import HostSettings
from .._streaming.channel import StreamEvent, TurnStreamStore
from .._streaming.store_source import app_stream_store
from .._turn_options import contents_bytes
from ._conversation_client import DurableTaskConversationClient

T = TypeVar("T")


class AgentClient:
    """Conversations of the agents an `AgentWorker` hosts, through a durabletask client.

    Args:
        client: A `TaskHubGrpcClient`, or `durabletask.azuremanaged`'s `DurableTaskSchedulerClient`, connected to
            the same task hub as the worker.
        settings: Limits and defaults (message size, waits); read from the environment when omitted.
        clock: Where turn ids and approval expiry take their time from.
        durable_task_scheduler: Whether the backend caps entity ids at 100 characters; None: when the client is a
            `DurableTaskSchedulerClient` or the settings say so.
        agents: The names the worker hosts, to refuse any other at once (`AgentNotFoundError`); None takes any
            name, and a turn for an agent no worker hosts then waits its whole wait and answers pending.
        stream_store: The worker's turn stream store, to stream turns live (`Conversation.stream`); None: the one
            the settings choose (`AGENT_HOST_STREAM_STORE`), or none (a turn's events then come once it finished).
    """

    def __init__(
        self,
        client: TaskHubGrpcClient,
        *,
        settings: HostSettings | None = None,
        clock: Clock = SYSTEM_CLOCK,
        durable_task_scheduler: bool | None = None,
        agents: Sequence[str] | None = None,
        stream_store: TurnStreamStore | None = None,
    ) -> None:
        self.client = client
        self.agents = None if agents is None else list(agents)
        self.settings = settings or HostSettings.from_environment()
        self.clock = clock
        self.durable_task_scheduler = (
            self.settings.durable_task_scheduler or _is_scheduler_client(client)
            if durable_task_scheduler is None
            else durable_task_scheduler
        )
        self.stream_store = app_stream_store(stream_store, self.settings.turn_record_ttl_seconds)
        # The sync API runs the conversation client's coroutines here, on a loop of this client's own.
        self._loop = AgentEventLoop()

    def close(self) -> None:
        """Release the turn stream store the settings chose (one passed as `stream_store=` stays open)."""
        self.stream_store.close()

    def conversation(self, agent: str, conversation_id: str) -> Conversation:
        """One conversation of `agent` (the name it was registered under).

        Raises:
            AgentNotFoundError: `agents` was given and does not name it.
            InvalidRequestError: the id is invalid, or too long for the backend's entity ids
                (`invalid_conversation_id`).
        """
        route = self._route(agent)
        return Conversation(self, route, validate_conversation_id(conversation_id, route))

    def get_agent(self, agent_name: str) -> ClientAgent:
        """The agent as agent-framework-durabletask's `DurableAIAgentClient.get_agent` gives it: `run`,
        `create_session`, `get_session` (docs/standalone-worker.md, "Migrating").

        Raises:
            AgentNotFoundError: `agents` was given and does not name it.
        """
        return ClientAgent(self, self._route(agent_name))

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run one of the conversation client's coroutines to its end on this client's loop."""
        return self._loop.run(coroutine)

    def _route(self, agent: str) -> AgentRoute:
        """What the routes know of a registered agent, from its name.

        Raises:
            AgentNotFoundError: `agents` was given and does not name it.
        """
        if self.agents is not None and agent not in self.agents:
            raise AgentNotFoundError(agent[:80], sorted(self.agents))
        entity_name = entity_name_for(agent)
        limit = conversation_id_limit(entity_name, durable_task_scheduler=self.durable_task_scheduler)
        return AgentRoute(name=agent, entity_name=entity_name, history="", max_conversation_id_length=limit)


class Conversation:
    """One conversation: take turns, read it, change its retention, delete it. Made by `AgentClient.conversation`."""

    def __init__(self, owner: AgentClient, route: AgentRoute, conversation_id: str) -> None:
        self._owner = owner
        self._settings = owner.settings
        self._route = route
        self.agent = route.name
        self.conversation_id = conversation_id
        self._conversations = DurableTaskConversationClient(owner.client, route)

    # -- turns ----------------------------------------------------------------------------------

    def send(
        self,
        message: str | None = None,
        *,
        contents: list[dict[str, Any]] | None = None,
        approvals: list[dict[str, Any]] | None = None,
        idempotency_key: str | None = None,
        wait: bool = True,
        timeout_seconds: float | None = None,
        response_format: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Take one turn, as `POST .../turns` does: the turn's body when it settled, or its pending body.

        Args:
            message: The user's text.
            contents: The message as core `Content` dicts, in place of `message`.
            approvals: Answers to pending approval requests, `{"id": ..., "approved": bool}`.
            idempotency_key: Retries with the same key (and request) take the turn once and read its answer.
            wait: Wait for the answer (up to `timeout_seconds`, `AGENT_HOST_WAIT_SECONDS` by default); False
                returns the pending body at once.
            timeout_seconds: How long to wait, at most `AGENT_HOST_MAX_WAIT_SECONDS`.
            response_format: A JSON schema the answer must match (its parsed value is then `value`).
            options: Chat options for this turn (`temperature`, ...).

        Returns:
            The turn body (`status` "completed", `text`, `messages`, `usage`, ...), or `status` "pending" with the
            `turnId` when the wait ended first (read it later with `turn`).

        Raises:
            InvalidRequestError: a missing message, bad options, an unknown approval or key (400).
            MessageTooLargeError: the message is over `AGENT_HOST_MAX_MESSAGE_BYTES` (413).
            IdempotencyConflictError: the key was used for a different request (409).
            AgentHostError: the turn failed, with the code its record holds (`turn_failed`,
                `state_capacity_exceeded`, ...); `TurnExpiredError`, `ConversationNotFoundError` as the route.
        """
        request = self._turn_request(message, contents, approvals, wait, timeout_seconds, response_format, options)
        key = _checked_key(idempotency_key)
        wait_seconds = float(request.timeout_seconds or self._settings.default_wait_seconds) if request.wait else None
        ask = TurnAsk(self.conversation_id, request.asked(), idempotency_key=key, wait_seconds=wait_seconds)
        match self._take_turn(ask):
            case Answered(turn, conversation):
                return render_turn(self.conversation_id, turn, conversation.agent_name)
            case Failed(turn) as failed:
                # The route answers a failed turn with its error's status: here that is the error raised.
                raise recorded_error(failed.error, turn.turn_id)
            case Accepted(turn_id) | Pending(turn_id):
                return render_pending(self.conversation_id, turn_id)
            case Gone(_, error):
                raise error

    async def stream(
        self,
        message: str | None = None,
        *,
        contents: list[dict[str, Any]] | None = None,
        approvals: list[dict[str, Any]] | None = None,
        idempotency_key: str | None = None,
        response_format: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Take one turn and follow it, as `POST .../turns` with `Accept: text/event-stream`: the events its SSE
        carries (`turn.started`, `message.delta`, ...), live as the entity writes them, ending with `turn.completed`,
        `turn.failed` or `turn.cancelled`, whose data is the body `send` returns. An `async for` on any event loop.

        The arguments are `send`'s. Raises what `send` raises before the turn is taken, and what `events` raises.
        """
        request = self._turn_request(message, contents, approvals, False, None, response_format, options)
        ask = TurnAsk(self.conversation_id, request.asked(), idempotency_key=_checked_key(idempotency_key), stream=True)
        match await take_turn(self._conversations, ask, self._owner.clock, self._in_flight()):
            case Answered(turn) | Failed(turn):  # a retry of a key: the stream of the key's turn
                turn_id = turn.turn_id
            case Accepted(turn_id) | Pending(turn_id):
                pass
            case Gone(_, error):
                raise error
        async for event in self.events(turn_id):
            yield event

    async def events(self, turn_id: str, *, after: int = 0) -> AsyncIterator[StreamEvent]:
        """A turn's events after event `after` (0: from the first), as `GET .../turns/{turnId}/stream` with
        `Last-Event-ID: <after>` sends them, until its last event; live when the client has the worker's store.

        Raises:
            InvalidRequestError: not a turn id this host issues (`invalid_turn_id`).
            ConversationNotFoundError: the conversation was deleted with the turn (404).
            TurnExpiredError: the turn ran, but its record is no longer kept (410).
            TurnNotFoundError: the conversation never ran, and will not run, the turn (404).
        """
        validate_turn_id(turn_id)
        owner = self._owner
        store = owner.stream_store()
        reader = turn_reader(
            self._conversations, store, self._route, self.conversation_id, turn_id, self._settings, owner.clock
        )
        reader.settled(await self._conversations.read(self.conversation_id))  # refused before the first event
        async for event in reader.follow(after):
            if event is not None:  # a keep-alive of the HTTP stream
                yield event

    def turn(self, turn_id: str, *, timeout_seconds: float = 0.0) -> dict[str, Any]:
        """A turn's body once it settled (a failed turn's body too, as `GET .../turns/{turnId}` reads it), or its
        pending body when it has not settled within `timeout_seconds` (0: one read).

        Raises:
            InvalidRequestError: not a turn id this host issues (`invalid_turn_id`).
            TurnExpiredError: its record is no longer kept (410).
            ConversationNotFoundError: the conversation was deleted with the turn (404).
        """
        validate_turn_id(turn_id)
        state = self._wait_for_turn(turn_id, timeout_seconds) or ConversationView.empty()
        if state.deleted_with(turn_id):
            raise ConversationNotFoundError(self.agent, self.conversation_id, deleted=True)
        turn = state.turn(turn_id)
        if turn is not None:
            return render_turn(self.conversation_id, turn, state.agent_name)
        if state.is_expired(turn_id):
            raise TurnExpiredError(self.conversation_id, turn_id)
        return render_pending(self.conversation_id, turn_id)

    def run_reply(self, turn_id: str, timeout_seconds: float) -> dict[str, Any] | None:
        """The entity's `run` reply (`RunReply`, with the answer) for a turn once settled, or None after the wait.

        Raises:
            ConversationNotFoundError: the conversation was deleted with the turn (404).
        """
        state = self._wait_for_turn(turn_id, timeout_seconds)
        if state is None:
            return None
        if state.deleted_with(turn_id):
            raise ConversationNotFoundError(self.agent, self.conversation_id, deleted=True)
        turn = state.turn(turn_id)
        return expired_result(turn_id) if turn is None else reply_of(turn)

    # -- reads ----------------------------------------------------------------------------------

    def read(self) -> dict[str, Any]:
        """The conversation's summary, as `GET .../conversations/{id}` (without `history`: the worker knows who
        keeps the agent's history, not the client).

        Raises:
            ConversationNotFoundError: it does not exist, or was deleted (404).
            StateCorruptError, StateVersionError: its stored state cannot be read (422).
        """
        body = render_conversation(self._route, self.conversation_id, self._existing(), self._owner.clock.now_ms())
        body.pop("history")
        return body

    def messages(self, *, include_excluded: bool = False) -> list[dict[str, Any]]:
        """The transcript in conversation order, as `GET .../messages` lists it; compaction's exclusions only
        with `include_excluded`.

        Raises:
            ConversationNotFoundError: it does not exist, or was deleted (404).
        """
        state = self._existing()
        messages = [render_message(record, state.agent_name) for record in state.messages]
        return messages if include_excluded else [message for message in messages if not message["excluded"]]

    # -- changes --------------------------------------------------------------------------------

    def set_retention(self, mode: str, max_state_bytes: int, **watermarks: float) -> dict[str, Any]:
        """Change the conversation's retention, as `PUT .../retention` (`high_watermark`, `low_watermark` too).

        Returns:
            `{"conversationId", "retention", "applied", "stateBytes"}` once applied, or `status` "pending".

        Raises:
            InvalidRequestError: an invalid mode or budget (`invalid_retention`).
            StateCorruptError, StateVersionError: the stored state cannot be read; nothing is changed.
        """
        body = {"mode": mode, "maxStateBytes": max_state_bytes, **_camel(watermarks)}
        retention = parse_model(RetentionRequest, body).stored()
        wait_seconds = self._settings.default_wait_seconds
        change = change_retention(self._conversations, self.conversation_id, retention, self._owner.clock, wait_seconds)
        return self._owner._run(change).body(self.conversation_id)

    def delete(self, *, idempotency_key: str | None = None) -> bool:
        """Delete the conversation, as `DELETE .../conversations/{id}`: True once deleted, False while it is still
        being deleted after the wait.

        Raises:
            ConversationNotFoundError: there was nothing to delete, or another delete got there first (404).
        """
        change_id = delete_change_id(_checked_key(idempotency_key))
        return self._owner._run(delete_conversation(self._conversations, self.conversation_id, change_id))

    # -- through the conversation client ----------------------------------------------------------

    def _take_turn(self, ask: TurnAsk) -> TurnOutcome:
        return self._owner._run(take_turn(self._conversations, ask, self._owner.clock, self._in_flight()))

    def _in_flight(self) -> InFlight | None:
        """The conversation's turns in flight in the worker's stream store (None without one), listed as the routes
        list theirs, so `ifBusy` and cancel over HTTP see this client's turns."""
        turns = TurnsInFlight(self._owner.stream_store, self._settings, self._owner.clock)
        return turns.of(self._route.entity_name, self.conversation_id)

    def _wait_for_turn(self, turn_id: str, timeout: float) -> ConversationView | None:
        """The state that settles the turn (recorded, expired, deleted with it), or None after `timeout` seconds."""
        return self._owner._run(self._conversations.wait_for_turn(self.conversation_id, turn_id, timeout))

    def _existing(self) -> ConversationView:
        state = self._owner._run(self._conversations.read(self.conversation_id))
        if state is None or state.is_deleted:
            raise ConversationNotFoundError(self.agent, self.conversation_id, deleted=state is not None)
        return state

    # -- answers --------------------------------------------------------------------------------

    def _turn_request(
        self,
        message: str | None,
        contents: list[dict[str, Any]] | None,
        approvals: list[dict[str, Any]] | None,
        wait: bool,
        timeout_seconds: float | None,
        response_format: dict[str, Any] | None,
        options: dict[str, Any] | None,
    ) -> TurnRequest:
        """The turn as the route's JSON body would carry it, checked by the same model and limits."""
        given = {
            "message": message,
            "contents": contents,
            "approvals": approvals,
            "wait": wait,
            "timeoutSeconds": timeout_seconds,
            "responseFormat": response_format,
            "options": options,
        }
        body = {name: value for name, value in given.items() if value is not None}
        request = parse_model(TurnRequest, body, max_wait_seconds=self._settings.max_wait_seconds)
        size = len((request.message or "").encode("utf-8")) + contents_bytes(request.contents or [])
        if size > self._settings.max_message_bytes:
            raise MessageTooLargeError(size, self._settings.max_message_bytes)
        return request


class ClientAgent(ConversationSessions):
    """A hosted agent in agent-framework-durabletask's client shape: `agent.run("...", session=session)` blocks
    until the answer and returns an `AgentResponse`. Made by `AgentClient.get_agent`."""

    def __init__(self, owner: AgentClient, route: AgentRoute) -> None:
        self._owner = owner
        self._route = route
        self.name = route.name
        self.id = route.name
        self.display_name = route.name
        self.description = f"The hosted agent '{route.name}', run as a durable conversation."

    def create_session(self, *, session_id: str | None = None) -> ConversationSession:
        """A session for a new conversation (a random id), or one that joins the conversation `session_id`.

        Raises:
            InvalidRequestError: `session_id` is not a valid conversation id.
        """
        conversation_id = secrets.token_hex(16) if session_id is None else session_id
        validate_conversation_id(conversation_id, self._route)
        return ConversationSession(agent_name=self.name, conversation_id=conversation_id)

    def run(
        self,
        messages: Any = None,
        *,
        stream: bool = False,
        session: ConversationSession | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> AgentResponse:
        """Take one turn and wait for its answer (up to `AGENT_HOST_WAIT_SECONDS`).

        Args:
            messages: The user's message: text, a `Message`, or a list of them (text only).
            stream: Must be False.
            session: From `create_session()`; without one the turn starts a new conversation.
            options: `response_format` (a pydantic model class), `enable_tool_calls`, and chat options.

        Raises:
            ValueError: streaming or `wait_for_response=False` asked for, no text, a session of another agent.
            AgentTurnError: the turn failed, expired, or did not settle within the wait (`turn_pending`).
            StructuredOutputError: the answer does not validate as `response_format`.
        """
        if stream:
            raise ValueError("AgentClient agents return the whole answer: call run() without stream=True.")
        remaining = dict(options or {})
        if remaining.pop(WAIT_FOR_RESPONSE, True) is False:
            raise ValueError(
                "run(options={'wait_for_response': False}) is not supported: take the turn with "
                "AgentClient.conversation(agent, id).send(message, wait=False) and read it with turn(turnId)."
            )
        prepared = run_options(remaining)
        conversation = self._owner.conversation(self.name, self._conversation_of(session).conversation_id)
        request: dict[str, Any] = {"message": _message_text(messages)}
        if prepared.sent:
            request["options"] = prepared.sent
        if not prepared.tools_enabled:
            request["enableToolCalls"] = False
        ask = TurnAsk(conversation.conversation_id, request, wait_seconds=self._owner.settings.default_wait_seconds)
        outcome = conversation._take_turn(ask)
        turn_id = outcome.turn.turn_id if isinstance(outcome, Answered | Failed) else outcome.turn_id
        call = AgentCall(self.name, conversation.conversation_id, turn_id, prepared.response_format)
        match outcome:
            case Answered(turn) | Failed(turn):
                return call.response_from(reply_of(turn))
            case Gone(_, TurnExpiredError()):
                return call.response_from(expired_result(turn_id))
            case Gone(_, error):
                raise error
            case Accepted() | Pending():
                raise call.error(
                    "the turn did not finish within AGENT_HOST_WAIT_SECONDS; it keeps running", "turn_pending"
                )

    def _conversation_of(self, session: ConversationSession | None) -> ConversationSession:
        if session is None:
            return self.create_session()
        if not isinstance(session, ConversationSession) or session.agent_name != self.name:
            raise ValueError(f"Pass a session from {self.name}.create_session() (or get_session(id)).")
        return session


def reply_of(turn: TurnView) -> dict[str, Any]:
    """A settled turn as the entity's `run` reply (`RunReply`) gives it to an orchestration. Its answer is whole:
    MAX_REPLY_BYTES bounds what an orchestration's history records, and a client keeps no history."""
    answer = {"messages": list(turn.answer), "usage": turn.usage or None} if turn.completed else {"error": turn.error}
    reply = RunReply(turn_id=turn.turn_id, status=turn.status, at=turn.completed_at, **answer)
    return reply.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)


def recorded_error(error: Mapping[str, str], turn_id: str) -> AgentHostError:
    """The `AgentHostError` subclass whose code a failed turn recorded, carrying the recorded message as it is."""
    code = error.get("code", "turn_failed")
    kind = next((cls for cls in _error_classes(AgentHostError) if code in cls.__dict__.get("codes", ())), None)
    exc = (kind or AgentHostError).__new__(kind or AgentHostError)
    # The record holds the message the entity wrote once; each subclass's own constructor would write another.
    AgentHostError.__init__(exc, error.get("message", ""), code=code if kind is not None else None)
    exc.fields["turnId"] = turn_id
    return exc


def _error_classes(base: type[AgentHostError]) -> list[type[AgentHostError]]:
    found: list[type[AgentHostError]] = []
    for sub in base.__subclasses__():
        found += [sub, *_error_classes(sub)]
    return found


def _checked_key(key: str | None) -> str | None:
    if key is not None and not IDEMPOTENCY_KEY_PATTERN.fullmatch(key):
        raise InvalidRequestError(
            "An idempotency key must be 1-255 visible ASCII characters (a UUID works well).",
            code="invalid_idempotency_key",
        )
    return key


def _camel(names: Mapping[str, float]) -> dict[str, float]:
    return {name.split("_")[0] + "".join(part.title() for part in name.split("_")[1:]): v for name, v in names.items()}


def _is_scheduler_client(client: TaskHubGrpcClient) -> bool:
    """Whether the client talks to the Durable Task Scheduler, which caps entity ids at 100 characters."""
    try:
        from durabletask.azuremanaged.client import DurableTaskSchedulerClient
    except ImportError:  # durabletask-azuremanaged not installed: not a scheduler client
        return False
    return isinstance(client, DurableTaskSchedulerClient)
