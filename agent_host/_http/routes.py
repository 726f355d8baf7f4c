"""Conversation routes: parse, signal the conversation's entity, wait, render. Knows the contract, not the storage.

Handlers raise `AgentHostError`s; the app's route table (`route_table.py`) serves each on its path and method, and
`responses.respond` renders what they raise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import cast

import azure.durable_functions as df
import azure.functions as func

from .._clock import Clock
from .._contract import (
    CANCEL_OPERATION,
    AgentRoute,
    CancelKeep,
    CancelRequest,
    IfBusy,
    MessagesQuery,
    RetentionRequest,
    TurnQuery,
    TurnRequest,
    parse_model,
    validate_conversation_id,
    validate_turn_id,
)
from .._conversation.view import ConversationView, TurnView
from .._conversation_client.changes import change_retention, delete_change_id, delete_conversation
from .._conversation_client.client import ConversationClient, ConversationClientFactory
from .._conversation_client.in_flight import InFlight, TurnsInFlight
from .._conversation_client.turns import Accepted, Answered, Failed, Gone, Pending, TurnAsk, take_turn
from .._errors import (
    AgentNotFoundError,
    CancelNotRecordedError,
    ConversationNotFoundError,
    MessageTooLargeError,
    TurnExpiredError,
    TurnFinishedError,
    TurnNotFoundError,
    UnsupportedMediaTypeError,
    status_for_code,
)
from .._settings import HostSettings
from .._streaming.channel import TurnStreamStore
from .._streaming.store_errors import StreamStoreUnavailableError
from .._streaming.turn_controls import TurnControls
from .._turn_options import contents_bytes
from .agui_route import run_agui
from .event_stream import EventStreamResponse, RouteResponse
from .rendering import render_conversation, render_message, render_pending, render_turn
from .requests import (
    TEXT_MEDIA_TYPE,
    RequestConversations,
    accepts_event_stream,
    body_text,
    idempotency_key,
    is_json_type,
    json_body,
    json_object,
    last_event_id,
    media_type,
    query,
)
from .responses import json_response
from .run_route import run_compat
from .turn_stream import TurnStreamReader, turn_reader

_TURN_SHAPE = '{"message": "..."}'
_RETENTION_SHAPE = '{"mode": "auto", "maxStateBytes": 614400}'
_CANCEL_SHAPE = '{"keep": "partial"}'


class HealthRoute:
    """`GET /api/health`: the app is up, which agents it hosts and how, in agent-framework-azurefunctions' shape.

    Args:
        agents: Every agent orchestrations can call (workflow agent nodes too), by name.
        workflows: The names of the hosted workflows, read when asked.
    """

    def __init__(self, agents: Mapping[str, AgentRoute], workflows: Callable[[], list[str]]) -> None:
        self._agents = agents
        self._workflows = workflows

    async def health(self, req: func.HttpRequest) -> func.HttpResponse:
        """`GET /api/health`."""
        agents = [
            {
                "name": route.name,
                "type": route.agent_type,
                "http_endpoint_enabled": route.http_enabled,
                "mcp_tool_enabled": route.mcp_enabled,
            }
            for route in self._agents.values()
        ]
        body = {"status": "healthy", "agents": agents, "agent_count": len(agents), "workflows": self._workflows()}
        return json_response(200, body)


class Routes:
    """The handlers behind every conversation route; one instance per app, reading the agents it serves over HTTP.

    `conversations` is the host's conversation client factory, which every handler here (and `/run`, AG-UI and the
    Responses API through `self.conversations`) builds its per-request client with; `stream_store` gives the store
    turn streams are read from (None when none is configured); `run_wait` is how long `/run` waits for an answer
    (the app's `max_poll_retries * poll_interval_seconds`).
    """

    def __init__(
        self,
        agents: Mapping[str, AgentRoute],
        settings: HostSettings,
        clock: Clock,
        stream_store: Callable[[], TurnStreamStore | None] = lambda: None,
        *,
        conversations: ConversationClientFactory,
        run_wait: float | None = None,
    ) -> None:
        self.conversations = RequestConversations(conversations)
        self._agents = agents
        self._settings = settings
        self._clock = clock
        self._stream_store = stream_store
        self._run_wait = settings.default_wait_seconds if run_wait is None else run_wait
        self._turns_in_flight = TurnsInFlight(stream_store, settings, clock)

    # -- handlers (the route table, `_app.py`, serves each on its path and method) -----------------

    async def run(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/agents/{agent}/run`: the agent-framework-azurefunctions request and answer shapes."""
        agent = self._agent(req)
        in_flight = functools.partial(self.in_flight, agent)
        conversations = functools.partial(self.conversations, req, client, agent)
        return await run_compat(req, conversations, agent, self._settings, self._clock, self._run_wait, in_flight)

    async def agui(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> RouteResponse:
        """`POST /api/agents/{agent}/agui`: one AG-UI run, a turn of the thread's conversation, as AG-UI events."""
        agent = self._agent(req)

        def reader(conversation_id: str, turn_id: str) -> TurnStreamReader:
            return self._reader(req, client, agent, conversation_id, turn_id)

        conversations = functools.partial(self.conversations, req, client, agent)
        in_flight = functools.partial(self.in_flight, agent)
        return await run_agui(req, conversations, agent, self._settings, self._clock, reader, in_flight)

    async def post_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> RouteResponse:
        """`POST .../conversations/{conversationId}/turns`: run one turn (streamed with `Accept: text/event-stream`)."""
        agent, conversation_id = self._target(req)
        request = self._parse_turn(req)
        events = accepts_event_stream(req)
        turns_url = req.url.split("?", 1)[0].rstrip("/")
        wait = None
        if request.wait and not events:
            wait = float(request.timeout_seconds or self._settings.default_wait_seconds)
        ask = TurnAsk(
            conversation_id,
            request.asked(),
            idempotency_key=idempotency_key(req),
            stream=events or request.stream,
            wait_seconds=wait,
            if_busy=cast(IfBusy, request.if_busy),
        )
        in_flight = self.in_flight(agent, conversation_id)
        outcome = await take_turn(self.conversations(req, client, agent), ask, self._clock, in_flight)
        match outcome:
            case Answered(turn, conversation) | Failed(turn, conversation):
                if events:  # only a retry of a key settles before it is streamed: it streams the key's turn
                    return self._turn_events(req, client, agent, conversation_id, turn.turn_id, turns_url)
                return _turn_response(conversation_id, conversation, turn, f"{turns_url}/{turn.turn_id}")
            case Accepted(turn_id) if events:
                return self._turn_events(req, client, agent, conversation_id, turn_id, turns_url)
            case Accepted(turn_id) | Pending(turn_id):
                pending_body = render_pending(conversation_id, turn_id)
                return json_response(202, pending_body, headers={"Location": f"{turns_url}/{turn_id}"})
            case Gone(_, error):
                raise error

    async def get_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET .../turns/{turnId}`: a turn's result, or that it is still pending."""
        agent, conversation_id = self._target(req)
        turn_id = validate_turn_id(req.route_params.get("turnId", ""))
        conversations = self.conversations(req, client, agent)
        stored = await conversations.read(conversation_id)
        await _refuse_if_nothing_queued(conversations, conversation_id, stored, turn_id)
        state = stored or ConversationView.empty()
        location = req.url.split("?", 1)[0]
        if state.deleted_with(turn_id):
            raise ConversationNotFoundError(agent.name, conversation_id, deleted=True)
        turn = state.turn(turn_id)
        if turn is not None:
            return _turn_response(conversation_id, state, turn, location, failure_as_error=False)
        if state.is_expired(turn_id):
            raise TurnExpiredError(conversation_id, turn_id)
        if self._turns_in_flight.may_be_pending(turn_id, state):
            return json_response(202, render_pending(conversation_id, turn_id), headers={"Location": location})
        raise TurnNotFoundError(conversation_id, turn_id)

    async def cancel_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST .../turns/{turnId}/cancel`: a queued turn never runs; a running one stops at its next step."""
        agent, conversation_id = self._target(req)
        turn_id = validate_turn_id(req.route_params.get("turnId", ""))
        idempotency_key(req)  # checked as on every write; a cancel is idempotent by its turn, key or none
        text = body_text(req, self._settings.max_message_bytes)
        data = json_object(text, _CANCEL_SHAPE) if text.strip() else {}
        request = parse_model(CancelRequest, data, max_wait_seconds=self._settings.max_wait_seconds)
        conversations = self.conversations(req, client, agent)
        stored = await conversations.read(conversation_id)
        await _refuse_if_nothing_queued(conversations, conversation_id, stored, turn_id)
        location = req.url.split("?", 1)[0].rstrip("/").removesuffix("/cancel")
        state = stored or ConversationView.empty()
        answer = _cancel_answer(agent, conversation_id, state, turn_id, location)
        if answer is not None:
            return answer
        if not self._turns_in_flight.may_be_pending(turn_id, state):
            raise TurnNotFoundError(conversation_id, turn_id)
        keep = cast(CancelKeep, request.keep)
        in_flight = self.in_flight(agent, conversation_id)
        running = True
        if in_flight is not None:
            keep, running = await record_cancel(in_flight.controls, conversation_id, turn_id, keep)
        # Recorded by the entity, also for a turn whose signal this one overtook (it then never runs).
        await conversations.signal(conversation_id, CANCEL_OPERATION, {"turnId": turn_id, "keep": keep})
        if not running:
            body = {"conversationId": conversation_id, "turnId": turn_id, "status": "cancelled"}
            return json_response(200, {**body, "cancel": {"keep": keep, "ran": False}}, headers={"Location": location})
        if request.wait:
            timeout = float(request.timeout_seconds or self._settings.default_wait_seconds)
            settled = await conversations.wait_for_turn(conversation_id, turn_id, timeout)
            answer = _cancel_answer(agent, conversation_id, settled, turn_id, location) if settled is not None else None
            if answer is not None:
                return answer
        body = {"conversationId": conversation_id, "turnId": turn_id, "status": "cancelling"}
        return json_response(202, body, headers={"Location": location})

    async def get_turn_stream(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> RouteResponse:
        """`GET .../turns/{turnId}/stream`: a turn's events, from the start or after `Last-Event-ID`."""
        agent, conversation_id = self._target(req)
        turn_id = validate_turn_id(req.route_params.get("turnId", ""))
        after = last_event_id(req)
        # A turn that cannot be streamed is refused before the stream starts: 404, 410 or 503 as a JSON error.
        reader, state = await self.open_turn(req, client, agent, conversation_id, turn_id)
        reader.settled(state)
        location = req.url.split("?", 1)[0].rstrip("/").removesuffix("/stream")
        return EventStreamResponse(reader.sse(after), headers={"Location": location})

    def _turn_events(
        self,
        req: func.HttpRequest,
        client: df.DurableOrchestrationClient,
        agent: AgentRoute,
        conversation_id: str,
        turn_id: str,
        turns_url: str,
    ) -> EventStreamResponse:
        """A turn request's answer as an event stream: the turn's events from the first."""
        reader = self._reader(req, client, agent, conversation_id, turn_id)
        return EventStreamResponse(reader.sse(0), headers={"Location": f"{turns_url}/{turn_id}"})

    def _reader(
        self,
        req: func.HttpRequest,
        client: df.DurableOrchestrationClient,
        agent: AgentRoute,
        conversation_id: str,
        turn_id: str,
    ) -> TurnStreamReader:
        conversations = self.conversations(req, client, agent)
        return turn_reader(
            conversations, self._stream_store(), agent, conversation_id, turn_id, self._settings, self._clock
        )

    async def open_turn(
        self,
        req: func.HttpRequest,
        client: df.DurableOrchestrationClient,
        agent: AgentRoute,
        conversation_id: str,
        turn_id: str,
    ) -> tuple[TurnStreamReader, ConversationView | None]:
        """A reader of one turn, and its conversation as read now, for a front door that reads turns by id (the
        OpenAI Responses API); `reader.settled(state)` then says whether the turn settled, is pending, or is gone.

        Raises:
            TurnNotFoundError: the conversation has nothing stored and no turn on its way.
            StorageUnavailableError, StateCorruptError: the conversation could not be read.
        """
        reader = self._reader(req, client, agent, conversation_id, turn_id)
        state = await reader.conversations.read(conversation_id)
        await _refuse_if_nothing_queued(reader.conversations, conversation_id, state, turn_id)
        return reader, state

    def in_flight(self, agent: AgentRoute, conversation_id: str) -> InFlight | None:
        """The conversation's turns in flight, for a front door taking one of its turns; None without a store."""
        return self._turns_in_flight.of(agent.entity_name, conversation_id)

    async def get_conversation(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET .../conversations/{conversationId}`: the conversation's summary."""
        agent, conversation_id = self._target(req)
        state = await self._existing(req, agent, conversation_id, client)
        return json_response(200, render_conversation(agent, conversation_id, state, self._clock.now_ms()))

    async def delete_conversation(
        self, req: func.HttpRequest, client: df.DurableOrchestrationClient
    ) -> func.HttpResponse:
        """`DELETE .../conversations/{conversationId}`: delete the conversation."""
        agent, conversation_id = self._target(req)
        change_id = delete_change_id(idempotency_key(req))
        conversations = self.conversations(req, client, agent)
        if await delete_conversation(conversations, conversation_id, change_id):
            return func.HttpResponse(status_code=204)
        return json_response(202, {"conversationId": conversation_id, "status": "deleting"})

    async def get_messages(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET .../conversations/{conversationId}/messages`: the transcript in conversation order."""
        agent, conversation_id = self._target(req)
        include_excluded = query(req, MessagesQuery).include_excluded
        state = await self._existing(req, agent, conversation_id, client)
        messages = [render_message(record, state.agent_name) for record in state.messages]
        if not include_excluded:
            messages = [message for message in messages if not message["excluded"]]
        return json_response(200, {"conversationId": conversation_id, "messages": messages})

    async def put_retention(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`PUT .../conversations/{conversationId}/retention`: change the conversation's retention."""
        agent, conversation_id = self._target(req)
        retention = json_body(req, RetentionRequest, self._settings.max_message_bytes, _RETENTION_SHAPE).stored()
        conversations = self.conversations(req, client, agent)
        change = await change_retention(
            conversations, conversation_id, retention, self._clock, self._settings.default_wait_seconds
        )
        return json_response(202 if change.state is None else 200, change.body(conversation_id))

    # -- parsing --------------------------------------------------------------------------------

    def _agent(self, req: func.HttpRequest) -> AgentRoute:
        name = req.route_params.get("agent", "")
        agent = self._agents.get(name)
        if agent is None:
            raise AgentNotFoundError(name[:80], sorted(self._agents))
        return agent

    def _target(self, req: func.HttpRequest) -> tuple[AgentRoute, str]:
        agent = self._agent(req)
        return agent, validate_conversation_id(req.route_params.get("conversationId", ""), agent)

    async def _existing(
        self, req: func.HttpRequest, agent: AgentRoute, conversation_id: str, client: df.DurableOrchestrationClient
    ) -> ConversationView:
        state = await self.conversations(req, client, agent).read(conversation_id)
        if state is None or state.is_deleted:
            raise ConversationNotFoundError(agent.name, conversation_id, deleted=state is not None)
        return state

    def _parse_turn(self, req: func.HttpRequest) -> TurnRequest:
        text = body_text(req, self._settings.max_message_bytes)
        media = media_type(req) or (TEXT_MEDIA_TYPE if not text.lstrip().startswith("{") else "application/json")
        limits = {"max_wait_seconds": self._settings.max_wait_seconds}
        if is_json_type(media):
            request = parse_model(TurnRequest, json_object(text, _TURN_SHAPE), **limits)
        elif media == TEXT_MEDIA_TYPE:
            options = query(req, TurnQuery, **limits)
            data = {"message": text, "wait": options.wait, "timeoutSeconds": options.timeout_seconds}
            request = parse_model(TurnRequest, data, **limits)
        else:
            raise UnsupportedMediaTypeError(media, f"application/json ({_TURN_SHAPE}) or text/plain")
        size = len((request.message or "").encode("utf-8")) + contents_bytes(request.contents or [])
        if size > self._settings.max_message_bytes:
            raise MessageTooLargeError(size, self._settings.max_message_bytes)
        return request


async def record_cancel(
    controls: TurnControls, conversation_id: str, turn_id: str, keep: CancelKeep
) -> tuple[CancelKeep, bool]:
    """Write the cancel request where the turn reads it; returns the `keep` that holds (the first request's) and
    whether the turn had started running.

    Raises:
        CancelNotRecordedError: the store failed, saying whether the request was written.
    """
    try:
        await controls.request_cancel(turn_id, keep)
    except StreamStoreUnavailableError as exc:
        raise CancelNotRecordedError(conversation_id, turn_id, exc.failure, recorded=False) from exc
    try:
        # The request first, then the running mark: the entity writes them the other way round, so a turn not yet
        # marked running is certain to see the request before it runs.
        held = await controls.cancel_requested(turn_id)
        return held or keep, await controls.is_running(turn_id)
    except StreamStoreUnavailableError as exc:
        raise CancelNotRecordedError(conversation_id, turn_id, exc.failure, recorded=True) from exc


def _cancel_answer(
    agent: AgentRoute, conversation_id: str, state: ConversationView, turn_id: str, location: str
) -> func.HttpResponse | None:
    """The answer to a cancel of a turn `state` settles: 200 with a cancelled turn; None while it has not settled.

    Raises:
        TurnFinishedError: the turn finished (completed or failed) before it could be stopped.
        ConversationNotFoundError, TurnExpiredError: the turn was deleted with its conversation, or its receipt is gone.
    """
    if state.deleted_with(turn_id):
        raise ConversationNotFoundError(agent.name, conversation_id, deleted=True)
    turn = state.turn(turn_id)
    if turn is not None:
        if not turn.cancelled:
            raise TurnFinishedError(conversation_id, turn.turn_id, turn.status)
        return _turn_response(conversation_id, state, turn, location)
    if state.is_expired(turn_id):
        raise TurnExpiredError(conversation_id, turn_id)
    return None


def _turn_response(
    conversation_id: str,
    state: ConversationView,
    turn: TurnView,
    location: str,
    *,
    failure_as_error: bool = True,
) -> func.HttpResponse:
    """A finished turn of the conversation `state`. A failed turn answers its error's status to the request that
    ran it, but the turn resource itself reads back with 200: the read succeeded, and `status` says it failed."""
    body = render_turn(conversation_id, turn, state.agent_name)
    status = status_for_code(turn.error["code"]) if turn.error is not None and failure_as_error else 200
    return json_response(status, body, headers={"Location": location})


async def _refuse_if_nothing_queued(
    conversations: ConversationClient, conversation_id: str, state: ConversationView | None, turn_id: str
) -> None:
    """Refuse a turn id of a conversation that has nothing stored and no turn on its way, at once: without this a
    made-up id would be waited on (polling state) for minutes.

    Raises:
        TurnNotFoundError: no turn of the conversation was ever accepted.
    """
    if state is None and not await conversations.may_hold_queued_turns(conversation_id):
        raise TurnNotFoundError(conversation_id, turn_id)
