"""The OpenAI Responses API as a front door: `POST /responses`, `GET /responses/{id}`, `GET /models` under /openai/v1.

A thin layer over `take_turn`: a request becomes one turn of a durable conversation (the same exactly-once turns,
retention, approvals and streams as our own routes), its outcome becomes a Response object, its turn stream becomes
the Responses API's server-sent events. A response id names the agent, the conversation and the turn, reversibly.
Knows the Responses API's wire shapes and the conversation client; nothing of storage.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import azure.durable_functions as df
import azure.functions as func
from agent_framework import Message
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from .._clock import Clock
from .._contract import AgentRoute, validate_conversation_id, validate_turn_id
from .._conversation.view import ConversationView, TurnView
from .._conversation_client.client import ConversationClient
from .._conversation_client.turns import Accepted, Answered, Failed, Gone, Pending, TurnAsk, take_turn
from .._errors import (
    AgentHostError,
    AgentNotFoundError,
    InvalidRequestError,
    MessageTooLargeError,
    ResponseNotFoundError,
    TurnExpiredError,
    status_for_code,
)
from .._records import message_text
from .._settings import HostSettings
from .._streaming.channel import APPROVAL_REQUESTED, FINAL_EVENTS, MESSAGE_DELTA, TURN_STARTED, StreamEvent
from .._structured_output import response_format_of
from .._turn_ids import issued_at
from .._turn_options import chat_options_of
from .event_stream import KEEP_ALIVE, EventStreamResponse, RouteResponse
from .requests import body_text, idempotency_key, json_object
from .responses import json_response
from .routes import Routes
from .turn_stream import TurnStreamReader

RESPONSE_ID_PREFIX = "resp_"
CONVERSATION_ID_PREFIX = "conv_"
OWNER = "agent-host"
# Stream events are numbered from the turn stream's event ids, so every reader (and a resumed one) numbers them
# alike, a new attempt after a crash included; one stored event becomes at most 6 Responses API events.
SEQUENCE_STRIDE = 10
_RESPONSES_SHAPE = '{"model": "<agent>", "input": "..."}'
# Fields the Responses API defines that do not change what a turn does here; they are accepted and not used.
_IGNORED_FIELDS = (
    "user",
    "parallel_tool_calls",
    "truncation",
    "include",
    "stream_options",
    "prompt_cache_key",
    "safety_identifier",
    "service_tier",
)
_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_TEXT_PARTS = ("input_text", "output_text")


def invalid_param(message: str, param: str | None, *, code: str = "invalid_body") -> InvalidRequestError:
    """A request error about one field, which `param` names as the Responses API's errors do."""
    error = InvalidRequestError(message, code=code)
    error.param = param
    return error


@dataclass(frozen=True)
class ResponseRef:
    """What a response id names: the agent, its conversation and the turn."""

    agent: str
    conversation_id: str
    turn_id: str

    @property
    def response_id(self) -> str:
        """The id: the three names joined by `/` (none of them can hold one), base64url without padding."""
        raw = f"{self.agent}/{self.conversation_id}/{self.turn_id}".encode()
        return RESPONSE_ID_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def parse_response_id(response_id: str, agents: Mapping[str, AgentRoute], param: str | None = None) -> ResponseRef:
    """The agent, conversation and turn a response id names.

    Raises:
        ResponseNotFoundError: not an id this app issues, or one of an agent it does not serve.
    """
    encoded = response_id.removeprefix(RESPONSE_ID_PREFIX)
    try:
        if encoded == response_id or len(encoded) > 400:
            raise ValueError(response_id)
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("ascii")
        agent_name, conversation_id, turn_id = raw.split("/")
        agent = agents[agent_name]
        return ResponseRef(agent.name, validate_conversation_id(conversation_id, agent), validate_turn_id(turn_id))
    except (ValueError, binascii.Error, KeyError, InvalidRequestError):
        raise ResponseNotFoundError(response_id, param) from None


def render_openai_error(error: AgentHostError) -> func.HttpResponse:
    """An error in the Responses API's shape, `{"error": {"message", "type", "param", "code"}}`, with its status."""
    status = status_for_code(error.code)
    kind = "server_error" if status >= 500 else "invalid_request_error"
    body = {"error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}}
    return json_response(status, body, headers=error.headers or None)


class _TextFormat(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["text", "json_schema", "json_object"]
    name: StrictStr | None = None
    # `schema` would shadow a BaseModel attribute: it is read under another name.
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    description: StrictStr | None = None
    strict: StrictBool | None = None


class _TextParam(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: _TextFormat | None = None
    verbosity: StrictStr | None = None


class _ConversationParam(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: StrictStr


class ResponsesRequest(BaseModel):
    """The body of `POST /responses`: the fields of the Responses API's create request that apply to a turn."""

    model_config = ConfigDict(extra="forbid")

    model: StrictStr
    input: StrictStr | list[dict[str, Any]]
    instructions: StrictStr | None = None
    previous_response_id: StrictStr | None = None
    conversation: StrictStr | _ConversationParam | None = None
    stream: StrictBool = False
    background: StrictBool = False
    store: StrictBool = True
    metadata: dict[str, StrictStr] | None = None
    text: _TextParam | None = None
    tool_choice: StrictStr | dict[str, Any] | None = None
    tools: list[Any] | None = None
    temperature: StrictInt | StrictFloat | None = None
    top_p: StrictInt | StrictFloat | None = None
    max_output_tokens: StrictInt | None = None
    user: Any = None
    parallel_tool_calls: Any = None
    truncation: Any = None
    include: Any = None
    stream_options: Any = None
    prompt_cache_key: Any = None
    safety_identifier: Any = None
    service_tier: Any = None


def parse_responses_request(text: str) -> ResponsesRequest:
    """A create request's body, checked.

    Raises:
        InvalidRequestError: not a JSON object (`invalid_json`); InvalidRequestError: a field of the wrong type or
            an unknown one, naming it.
    """
    data = json_object(text, _RESPONSES_SHAPE)
    try:
        return ResponsesRequest.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        param = _param_path(problem["loc"])
        if problem["type"] == "extra_forbidden":
            raise invalid_param(f"Unknown parameter: '{param}'.", param) from None
        if problem["type"] == "missing":
            raise invalid_param(f"Missing required parameter: '{param}'.", param) from None
        raise invalid_param(f"Invalid value for '{param}': {problem['msg']}.", param) from None


def _param_path(loc: tuple[Any, ...]) -> str:
    """A field's path as the Responses API names it (`input[0].content`), dropping pydantic's union branch names."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not _is_union_branch(str(part)):
            path += f".{part}" if path else str(part)
    return path


def _is_union_branch(part: str) -> bool:
    """Whether a pydantic error location part names a branch of a union type (`str`, `list[...]`), not a field."""
    return part in ("str", "int", "float", "_ConversationParam") or "[" in part


@dataclass(frozen=True)
class _Echo:
    """What a create request asked that its Response object shows again (a retrieved one shows the defaults)."""

    instructions: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    text_format: dict[str, Any] = field(default_factory=lambda: {"type": "text"})
    tool_choice: Any = "auto"
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    store: bool = True
    background: bool = False


class OpenAIResponsesRoutes:
    """The Responses API's handlers over the agents served over HTTP; `routes` supplies stream readers, the
    conversations' turns in flight, and the rule for whether an unknown turn may still be queued."""

    def __init__(self, agents: Mapping[str, AgentRoute], settings: HostSettings, clock: Clock, routes: Routes) -> None:
        self._agents = agents
        self._settings = settings
        self._clock = clock
        self._routes = routes

    async def models(self, req: func.HttpRequest) -> func.HttpResponse:
        """`GET /openai/v1/models`: the agents, as models."""
        return json_response(200, {"object": "list", "data": [_model(name) for name in self._agents]})

    async def model(self, req: func.HttpRequest) -> func.HttpResponse:
        """`GET /openai/v1/models/{model}`: one agent, as a model."""
        return json_response(200, _model(self._agent(req.route_params.get("model", "")).name))

    async def create(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> RouteResponse:
        """`POST /openai/v1/responses`: one turn of the agent `model`, answered as a Response (or its events)."""
        request = parse_responses_request(body_text(req, self._settings.max_message_bytes))
        agent = self._agent(request.model, param="model")
        key = idempotency_key(req)
        payload = self._turn_payload(request)  # checked before anything is read or signalled
        conversations = self._routes.conversations(req, client, agent)
        conversation_id = await self._conversation_of(request, agent, conversations, key)
        wait = None if request.stream or request.background else float(self._settings.default_wait_seconds)
        ask = TurnAsk(conversation_id, payload, idempotency_key=key, stream=request.stream, wait_seconds=wait)
        outcome = await take_turn(conversations, ask, self._clock, self._routes.in_flight(agent, conversation_id))
        echo = _echo_of(request)
        match outcome:
            case Answered(turn, conversation) | Failed(turn, conversation):
                ref = ResponseRef(agent.name, conversation_id, turn.turn_id)
                if request.stream:  # only a retry of a key settles before it is streamed: it streams the key's turn
                    return await self._stream(req, client, agent, ref, echo)
                return json_response(200, self._response(ref, turn, conversation, echo))
            case Accepted(turn_id) if request.stream:
                return await self._stream(req, client, agent, ResponseRef(agent.name, conversation_id, turn_id), echo)
            case Accepted(turn_id) | Pending(turn_id):
                ref = ResponseRef(agent.name, conversation_id, turn_id)
                previous = request.previous_response_id
                return json_response(200, _response_body(ref, "in_progress", self._clock, echo, previous=previous))
            case Gone(_, error):
                raise error

    async def retrieve(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> RouteResponse:
        """`GET /openai/v1/responses/{responseId}`: the turn as a Response, or (`?stream=true`) its events after
        `starting_after`."""
        ref = parse_response_id(req.route_params.get("responseId", ""), self._agents)
        agent = self._agents[ref.agent]
        params = req.params or {}
        stream = params.get("stream", "false").lower()
        if stream not in ("true", "false"):
            raise invalid_param(f"stream must be true or false, got {stream[:20]!r}.", "stream", code="invalid_query")
        after = params.get("starting_after", "-1")
        if not after.lstrip("-").isdigit() or int(after) < -1:
            raise invalid_param(
                f"starting_after must be the sequence_number of an event the stream sent, got {after[:20]!r}.",
                "starting_after",
                code="invalid_query",
            )
        reader, state = await self._routes.open_turn(req, client, agent, ref.conversation_id, ref.turn_id)
        finished = reader.settled(state)  # the turn was deleted, expired or never seen: 404 or 410
        if stream == "true":
            return self._events(reader, ref, _Echo(), after=int(after))
        if finished is None:
            return json_response(200, _response_body(ref, "in_progress", self._clock, _Echo()))
        return json_response(200, self._response(ref, finished.turn, state or ConversationView.empty(), _Echo()))

    # -- the request ----------------------------------------------------------------------------

    def _agent(self, name: str, param: str | None = None) -> AgentRoute:
        agent = self._agents.get(name)
        if agent is None:
            error = AgentNotFoundError(name[:80], sorted(self._agents))
            error.param = param
            raise error
        return agent

    async def _conversation_of(
        self,
        request: ResponsesRequest,
        agent: AgentRoute,
        conversations: ConversationClient,
        key: str | None,
    ) -> str:
        """The conversation a request continues: its previous response's, the one it names, or a new one.

        Raises:
            InvalidRequestError: both `previous_response_id` and `conversation`, or an invalid conversation id.
            ResponseNotFoundError: the previous response names another agent's turn, or a conversation that is gone.
        """
        named = (
            request.conversation.id if isinstance(request.conversation, _ConversationParam) else request.conversation
        )
        if request.previous_response_id is not None and named is not None:
            raise invalid_param(
                "previous_response_id and conversation cannot both be given; send one.", "previous_response_id"
            )
        if request.previous_response_id is not None:
            previous_id = request.previous_response_id
            ref = parse_response_id(previous_id, self._agents, "previous_response_id")
            if ref.agent != agent.name:
                raise ResponseNotFoundError(previous_id, "previous_response_id")
            # A deleted (or never stored) conversation would silently start again empty: refuse instead.
            state = await conversations.read(ref.conversation_id)
            if state is None or state.is_deleted:
                raise ResponseNotFoundError(previous_id, "previous_response_id")
            return ref.conversation_id
        if named is not None:
            try:
                return validate_conversation_id(named, agent)
            except InvalidRequestError as exc:
                raise invalid_param(exc.message, "conversation", code=exc.code) from None
        # A retry of a keyed request must find the conversation its first attempt started.
        suffix = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32] if key is not None else secrets.token_hex(16)
        return f"{CONVERSATION_ID_PREFIX}{suffix}"

    def _turn_payload(self, request: ResponsesRequest) -> dict[str, Any]:
        """The `run` operation's fields for a request: its input, and what it asks of the model.

        Raises:
            InvalidRequestError: an input, option or format that cannot be used here, naming its field.
            MessageTooLargeError: the input's text is over the message limit.
        """
        if request.tools:
            raise invalid_param(
                "tools cannot be sent: the agent runs its own tools on the host. Send tools: [] or leave it out.",
                "tools",
            )
        payload = _input_payload(request.input)
        size = sum(len(text.encode("utf-8")) for text in _input_texts(payload))
        if size > self._settings.max_message_bytes:
            raise MessageTooLargeError(size, self._settings.max_message_bytes)
        wire = {
            "temperature": request.temperature,
            "topP": request.top_p,
            "maxTokens": request.max_output_tokens,
            "toolChoice": _tool_choice(request.tool_choice),
        }
        try:
            options = chat_options_of({name: value for name, value in wire.items() if value is not None})
        except ValueError as exc:
            # Our options' names, as the request spelled them.
            ours = str(exc).split()[0]
            param = _OPTION_PARAMS.get(ours)
            message = str(exc).replace(ours, param) if param is not None else str(exc)
            raise invalid_param(f"{message}.", param, code="invalid_options") from None
        if request.instructions:
            options["instructions"] = request.instructions
        if options:
            payload["options"] = options
        response_format = _response_format(request.text.format if request.text is not None else None)
        if response_format is not None:
            payload["responseFormat"] = response_format
        return payload

    # -- the answer ------------------------------------------------------------------------------

    def _response(
        self, ref: ResponseRef, turn: TurnView, conversation: ConversationView, echo: _Echo
    ) -> dict[str, Any]:
        """A settled turn as a Response object."""
        status = "completed" if turn.completed else "failed"
        body = _response_body(ref, status, self._clock, echo, previous=_previous_response(ref, conversation))
        body["output"] = _output_items(ref.agent, turn)
        body["usage"] = _usage(turn.usage)
        body["completed_at"] = turn.completed_at // 1000 if turn.completed_at is not None else None
        if not turn.completed:
            body["error"] = dict(turn.error or {})
        return body

    async def _stream(
        self,
        req: func.HttpRequest,
        client: df.DurableOrchestrationClient,
        agent: AgentRoute,
        ref: ResponseRef,
        echo: _Echo,
    ) -> EventStreamResponse:
        """A turn just taken, as Responses API events from the first."""
        reader, _ = await self._routes.open_turn(req, client, agent, ref.conversation_id, ref.turn_id)
        return self._events(reader, ref, echo, after=-1)

    def _events(self, reader: TurnStreamReader, ref: ResponseRef, echo: _Echo, *, after: int) -> EventStreamResponse:
        """The turn's stream as Responses API events, those numbered after `after`."""
        events = _ResponseEvents(ref, self._clock, echo)

        async def body() -> AsyncIterator[bytes]:
            sequence = -1
            try:
                for event in events.opening():
                    sequence = event["sequence_number"]
                    if sequence > after:
                        yield _encode(event)
                async for stored in reader.follow(0):
                    if stored is None:
                        yield KEEP_ALIVE
                        continue
                    if stored.event in (MESSAGE_DELTA, APPROVAL_REQUESTED, TURN_STARTED):
                        translated = events.of(stored)
                    else:
                        translated = await self._closing(reader.conversations, ref, stored, events, echo)
                    for event in translated:
                        sequence = event["sequence_number"]
                        if sequence > after:
                            yield _encode(event)
            except AgentHostError as error:
                yield _encode(_error_event(error, max(sequence, after) + 1))

        return EventStreamResponse(body())

    async def _closing(
        self,
        conversations: ConversationClient,
        ref: ResponseRef,
        stored: StreamEvent,
        events: _ResponseEvents,
        echo: _Echo,
    ) -> list[dict[str, Any]]:
        """The events a stored event other than text and approvals adds: for the last one, the open item closed and
        the Response as it settled (read from the conversation, as `GET /responses/{id}` shows it)."""
        if stored.event not in FINAL_EVENTS:
            return []  # tool calls and results run on the host: they are not output items of the Response
        reported = ResponseRef(ref.agent, ref.conversation_id, str(stored.data.get("turnId", ref.turn_id)))
        state = await conversations.read(ref.conversation_id) or ConversationView.empty()
        turn = state.turn(reported.turn_id)
        if turn is None:
            raise TurnExpiredError(ref.conversation_id, reported.turn_id)
        return events.closing(stored.id, self._response(reported, turn, state, echo))


_OPTION_PARAMS = {
    "options.temperature": "temperature",
    "options.topP": "top_p",
    "options.maxTokens": "max_output_tokens",
    "options.toolChoice": "tool_choice",
}


def _model(name: str) -> dict[str, Any]:
    # Agents have no creation time the API could show; 0 says so rather than inventing one.
    return {"id": name, "object": "model", "created": 0, "owned_by": OWNER}


def _echo_of(request: ResponsesRequest) -> _Echo:
    text_format = request.text.format if request.text is not None else None
    shown_format = text_format.model_dump(exclude_none=True, by_alias=True) if text_format is not None else None
    return _Echo(
        instructions=request.instructions,
        metadata=dict(request.metadata or {}),
        text_format=shown_format or {"type": "text"},
        tool_choice=request.tool_choice or "auto",
        temperature=request.temperature,
        top_p=request.top_p,
        max_output_tokens=request.max_output_tokens,
        store=request.store,
        background=request.background,
    )


def _input_payload(value: str | list[dict[str, Any]]) -> dict[str, Any]:
    """The turn's input from the request's `input`: one message (text and role), whole messages, approval answers.

    Raises:
        InvalidRequestError: an empty input, an item or content part that does not map to a turn's input.
    """
    if isinstance(value, str):
        if not value.strip():
            raise invalid_param("input is empty; send some text.", "input", code="missing_message")
        return {"message": value}
    messages: list[tuple[str, str]] = []
    approvals: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        where = f"input[{index}]"
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(_input_message(item, where))
        elif kind == "mcp_approval_response":
            request_id, approve = item.get("approval_request_id"), item.get("approve")
            if not isinstance(request_id, str) or not isinstance(approve, bool):
                raise invalid_param(
                    f'{where} must be {{"type": "mcp_approval_response", "approval_request_id": "...", '
                    '"approve": true}.',
                    where,
                )
            approvals.append({"id": request_id, "approved": approve})
        else:
            raise invalid_param(
                f"{where} has type {kind!r}; input items here are messages and mcp_approval_response answers to "
                "the approval requests a response returned (the agent's tools run on the host).",
                f"{where}.type",
            )
    if not messages and not approvals:
        raise invalid_param("input has no items; send a message.", "input", code="missing_message")
    payload: dict[str, Any] = {}
    if approvals:
        payload["approvals"] = approvals
    if len(messages) == 1:
        role, text = messages[0]
        payload["message"] = text
        if role != "user":
            payload["role"] = role
    elif messages:
        payload["messages"] = [Message(role, [text]).to_dict() for role, text in messages]
    return payload


def _input_message(item: dict[str, Any], where: str) -> tuple[str, str]:
    """An input message as its role and text.

    Raises:
        InvalidRequestError: an unknown role, or content that is not text.
    """
    role = _ROLES.get(str(item.get("role")))
    if role is None:
        raise invalid_param(
            f"{where}.role must be user, system, developer or assistant, got {item.get('role')!r}.", f"{where}.role"
        )
    content = item.get("content")
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = []
        for number, part in enumerate(content):
            if (
                not isinstance(part, dict)
                or part.get("type") not in _TEXT_PARTS
                or not isinstance(part.get("text"), str)
            ):
                raise invalid_param(
                    f'{where}.content[{number}] must be {{"type": "input_text", "text": "..."}}; images and files are '
                    "not taken here.",
                    f"{where}.content[{number}]",
                )
            parts.append(part["text"])
    else:
        raise invalid_param(f"{where}.content must be text or a list of input_text parts.", f"{where}.content")
    text = "".join(parts)
    if not text.strip():
        raise invalid_param(f"{where}.content is empty; send some text.", f"{where}.content", code="missing_message")
    return role, text


def _input_texts(payload: Mapping[str, Any]) -> list[str]:
    texts = [payload["message"]] if payload.get("message") else []
    return texts + [Message.from_dict(record).text for record in payload.get("messages", ())]


def _tool_choice(value: str | dict[str, Any] | None) -> Any:
    """The Responses API's `tool_choice` in our options' form (`{"type": "function", "name"}` requires that tool).

    Raises:
        InvalidRequestError: any other form (hosted and MCP tool choices name tools the agent does not have).
    """
    if value is None or value in ("auto", "none", "required"):
        return value
    if isinstance(value, dict) and value.get("type") == "function" and set(value) == {"type", "name"}:
        return {"mode": "required", "requiredFunctionName": value["name"]}
    raise invalid_param(
        f'tool_choice must be "auto", "none", "required" or {{"type": "function", "name": "<tool>"}}, got '
        f"{str(value)[:80]}.",
        "tool_choice",
        code="invalid_options",
    )


def _response_format(text_format: _TextFormat | None) -> dict[str, Any] | None:
    """Core's response format for `text.format`: a `json_schema` format's schema, or any JSON object for
    `json_object`; None for plain text.

    Raises:
        InvalidRequestError: a `json_schema` format without a usable schema or name.
    """
    if text_format is None or text_format.type == "text":
        return None
    if text_format.type == "json_object":
        return response_format_of({"type": "object"})
    section: dict[str, Any] = {"schema": text_format.schema_}
    if text_format.name is not None:
        section["name"] = text_format.name
    try:
        return response_format_of({"type": "json_schema", "json_schema": section})
    except ValueError as exc:
        raise invalid_param(
            f"text.format is not usable: {exc}.", "text.format", code="invalid_response_format"
        ) from None


def _response_body(
    ref: ResponseRef, status: str, clock: Clock, echo: _Echo, *, previous: str | None = None
) -> dict[str, Any]:
    """A Response object with no output yet."""
    issued = issued_at(ref.turn_id)
    return {
        "id": ref.response_id,
        "object": "response",
        # From the turn id, issued by the injectable clock, so a create and a later retrieve agree.
        "created_at": (issued if issued is not None else clock.now_ms()) // 1000,
        "status": status,
        "model": ref.agent,
        "output": [],
        "error": None,
        "incomplete_details": None,
        "instructions": echo.instructions,
        "metadata": echo.metadata,
        "parallel_tool_calls": True,
        "temperature": echo.temperature,
        "top_p": echo.top_p,
        "max_output_tokens": echo.max_output_tokens,
        "tool_choice": echo.tool_choice,
        "tools": [],
        "text": {"format": echo.text_format},
        "previous_response_id": previous,
        "conversation": {"id": ref.conversation_id},
        "store": echo.store,
        "background": echo.background,
        "usage": None,
    }


def _previous_response(ref: ResponseRef, conversation: ConversationView) -> str | None:
    """The response of the conversation's turn before this one, while its receipt is kept."""
    earlier = [turn.turn_id for turn in conversation.receipts()]
    if ref.turn_id not in earlier or earlier.index(ref.turn_id) == 0:
        return None
    return ResponseRef(ref.agent, ref.conversation_id, earlier[earlier.index(ref.turn_id) - 1]).response_id


def _output_items(agent: str, turn: TurnView) -> list[dict[str, Any]]:
    """The answer's assistant text as message items, then the approvals it left pending as approval requests."""
    texts = [text for record in turn.answer if record.get("role") == "assistant" and (text := message_text(record))]
    items = [_message_item(_item_id(turn.turn_id, number), text, "completed") for number, text in enumerate(texts)]
    return items + [_approval_item(agent, request) for request in turn.approval_requests]


def _item_id(turn_id: str, number: int) -> str:
    """A message item's id: the turn's, and the item's place among its messages, so the items a stream opens and the
    settled Response's carry the same ids."""
    return f"msg_{turn_id}_{number}"


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = [_text_part(text)] if status == "completed" else []
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _approval_item(agent: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call waiting for approval as the Responses API's approval request (answered by an
    `mcp_approval_response` input item)."""
    return {
        "id": request["id"],
        "type": "mcp_approval_request",
        "name": request.get("toolName") or "",
        "arguments": json.dumps(request.get("arguments") or {}),
        "server_label": agent,
    }


def _usage(usage: Mapping[str, Any]) -> dict[str, Any] | None:
    """Core's usage details as the Responses API's usage, or None when the model reported none."""
    if not usage:
        return None
    input_tokens = int(usage.get("input_token_count") or 0)
    output_tokens = int(usage.get("output_token_count") or 0)
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": int(usage.get("cached_input_token_count") or 0)},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": int(usage.get("reasoning_token_count") or 0)},
        "total_tokens": int(usage.get("total_token_count") or input_tokens + output_tokens),
    }


@dataclass
class _OpenItem:
    """The message item whose text is streaming."""

    message_id: str
    item_id: str
    output_index: int
    text: str = ""


@dataclass
class _ResponseEvents:
    """A turn's stored stream events as the Responses API's, numbered from the stored ids (`SEQUENCE_STRIDE`)."""

    ref: ResponseRef
    clock: Clock
    echo: _Echo
    _open: _OpenItem | None = None
    _next_index: int = 0
    _messages: int = 0

    def opening(self) -> list[dict[str, Any]]:
        """`response.created` and `response.in_progress`, numbered 0 and 1."""
        response = _response_body(self.ref, "in_progress", self.clock, self.echo)
        return [
            {"type": "response.created", "sequence_number": 0, "response": response},
            {"type": "response.in_progress", "sequence_number": 1, "response": response},
        ]

    def of(self, stored: StreamEvent) -> list[dict[str, Any]]:
        """The events of a text delta, an approval request, or a new attempt (which opens nothing new)."""
        events: list[dict[str, Any]] = []
        if stored.event == TURN_STARTED:
            # A new attempt after a crash streams its answer again, in new items: what the last one left open ends.
            events += self._close()
        elif stored.event == MESSAGE_DELTA and stored.data.get("role") == "assistant":
            message_id = str(stored.data.get("messageId"))
            item = self._open
            if item is None or item.message_id != message_id:
                events += self._close()
                item = self._start(message_id, events)
            item.text += stored.data["text"]
            events.append(self._text_event("response.output_text.delta", item, delta=stored.data["text"]))
        elif stored.event == APPROVAL_REQUESTED:
            events += self._close()
            approval = _approval_item(self.ref.agent, stored.data)
            index = self._take_index()
            events.append({"type": "response.output_item.added", "output_index": index, "item": approval})
            events.append({"type": "response.output_item.done", "output_index": index, "item": approval})
        return _numbered(stored.id, events)

    def closing(self, event_id: int, response: dict[str, Any]) -> list[dict[str, Any]]:
        """The open item closed, then `response.completed` (or `response.failed`) with the settled Response."""
        kind = "response.completed" if response["status"] == "completed" else "response.failed"
        return _numbered(event_id, [*self._close(), {"type": kind, "response": response}])

    def _take_index(self) -> int:
        index, self._next_index = self._next_index, self._next_index + 1
        return index

    def _start(self, message_id: str, events: list[dict[str, Any]]) -> _OpenItem:
        """Open a message item for `message_id`, adding the events that open it to `events`."""
        item = _OpenItem(message_id, _item_id(self.ref.turn_id, self._messages), self._take_index())
        self._open, self._messages = item, self._messages + 1
        added = {"type": "response.output_item.added", "output_index": item.output_index}
        part = {"type": "response.content_part.added", "item_id": item.item_id, "output_index": item.output_index}
        events.append({**added, "item": _message_item(item.item_id, "", "in_progress")})
        events.append({**part, "content_index": 0, "part": _text_part("")})
        return item

    def _close(self) -> list[dict[str, Any]]:
        item, self._open = self._open, None
        if item is None:
            return []
        where = {"item_id": item.item_id, "output_index": item.output_index, "content_index": 0}
        return [
            self._text_event("response.output_text.done", item, text=item.text),
            {"type": "response.content_part.done", **where, "part": _text_part(item.text)},
            {
                "type": "response.output_item.done",
                "output_index": item.output_index,
                "item": _message_item(item.item_id, item.text, "completed"),
            },
        ]

    @staticmethod
    def _text_event(kind: str, item: _OpenItem, **text: str) -> dict[str, Any]:
        where = {"item_id": item.item_id, "output_index": item.output_index, "content_index": 0}
        return {"type": kind, **where, **text, "logprobs": []}


def _numbered(event_id: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**event, "sequence_number": event_id * SEQUENCE_STRIDE + n} for n, event in enumerate(events)]


def _error_event(error: AgentHostError, sequence: int) -> dict[str, Any]:
    """The event that ends a stream which cannot go on, as the Responses API's `error` event."""
    return {
        "type": "error",
        "sequence_number": sequence,
        "code": error.code,
        "message": error.message,
        "param": error.param,
    }


def _encode(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, ensure_ascii=False)
    return f"event: {event['type']}\ndata: {data}\n\n".encode("utf-8", "backslashreplace")
