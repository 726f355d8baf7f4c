"""HTTP trigger handlers: parse, signal the conversation's entity, wait, render. Knows the contract, not the storage.

Handlers raise `AgentHostError`s; `render_error` is the one place that turns an error into an HTTP response.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from pydantic import ValidationError

from .._clock import Clock
from .._contract import (
    AgentRoute,
    TurnRequest,
    iso_time,
    parse_json_object,
    read_body_text,
    render_message,
    render_pending,
    render_turn,
    validate_conversation_id,
    validate_turn_id,
)
from .._conversation.approvals import PENDING_APPROVALS_KEY, check_answers, public_view
from .._conversation.entity import DELETE_OPERATION, RUN_OPERATION, SET_RETENTION_OPERATION
from .._conversation.retention import validated_retention
from .._conversation.state import encode_state
from .._conversation.turn_records import (
    EXPIRED_TURNS_KEY,
    answer_messages,
    find_keyed_turn,
    issued_at,
    new_turn_id,
    request_hash,
    resolve_alias,
)
from .._errors import (
    AgentHostError,
    AgentNotFoundError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    InvalidRequestError,
    MessageTooLargeError,
    MethodNotAllowedError,
    TurnExpiredError,
    TurnNotFoundError,
    UnsupportedMediaTypeError,
    status_for_code,
)
from .._settings import HostSettings
from .durable_client import ConversationClient
from .run_route import run_compat

logger = logging.getLogger("agent_host.http")

JSON_MEDIA_TYPE = "application/json"
TEXT_MEDIA_TYPE = "text/plain"
IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_APPROVALS_PER_TURN = 32
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
DELETE_WAIT_SECONDS = 30.0


class Routes:
    """The handlers behind every route; one instance per app, reading the app's registered agents."""

    def __init__(self, agents: Mapping[str, AgentRoute], settings: HostSettings, clock: Clock) -> None:
        self._agents = agents
        self._settings = settings
        self._clock = clock

    # -- routes ---------------------------------------------------------------------------------

    async def health(self, req: func.HttpRequest) -> func.HttpResponse:
        """`GET /api/health`: the app is up, and which agents it serves."""
        return await _respond(req, ("GET",), self._health)

    async def turns(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST .../conversations/{conversationId}/turns`: run one turn."""
        return await _respond(req, ("POST",), lambda: self._post_turn(req, client))

    async def turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET .../turns/{turnId}`: a turn's result, or that it is still pending."""
        return await _respond(req, ("GET",), lambda: self._get_turn(req, client))

    async def conversation(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET` or `DELETE .../conversations/{conversationId}`."""
        if req.method.upper() == "DELETE":
            return await _respond(req, ("DELETE",), lambda: self._delete_conversation(req, client))
        return await _respond(req, ("GET", "DELETE"), lambda: self._get_conversation(req, client))

    async def messages(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET .../conversations/{conversationId}/messages`: the transcript in conversation order."""
        return await _respond(req, ("GET",), lambda: self._get_messages(req, client))

    async def retention(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`PUT .../conversations/{conversationId}/retention`: change the conversation's retention."""
        return await _respond(req, ("PUT",), lambda: self._put_retention(req, client))

    async def run(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/agents/{agent}/run`: the agent-framework-azurefunctions request and answer shapes."""
        return await _respond(
            req, ("POST",), lambda: run_compat(req, client, self._agent(req), self._settings, self._clock)
        )

    # -- handlers -------------------------------------------------------------------------------

    async def _health(self) -> func.HttpResponse:
        agents = [{"name": route.name} for route in self._agents.values()]
        return _json(200, {"status": "healthy", "agents": agents})

    async def _post_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        request = self._parse_turn(req)
        key = _idempotency_key(req)
        conversations = ConversationClient(client, agent.entity_name)
        turns_url = req.url.split("?", 1)[0].rstrip("/")
        payload: dict[str, Any] = {"message": request.message}
        if request.approvals:
            payload["approvals"] = [answer.model_dump() for answer in request.approvals]
            state = await conversations.read(conversation_id)
            # The entity checks too; checking here answers a wrong id with 400 instead of a failed turn.
            check_answers(
                {item["id"]: item for item in (state or {}).get(PENDING_APPROVALS_KEY, [])}, payload["approvals"]
            )
        if key is not None:
            digest = request_hash(payload)
            known = await conversations.read(conversation_id) or {}
            earlier = find_keyed_turn(known, key)
            if earlier is not None:
                # A client retry: the same turn and answer, without running the model again.
                turn_id, record = earlier
                if record.get("requestHash") != digest:
                    raise IdempotencyConflictError(key, turn_id)
                return _turn_response(conversation_id, known, turn_id, record, f"{turns_url}/{turn_id}")
            payload.update(idempotencyKey=key, requestHash=digest)
        turn_id = new_turn_id(self._clock.now_ms())
        await conversations.signal(conversation_id, RUN_OPERATION, {"turnId": turn_id, **payload})
        state = None
        if request.wait:
            timeout = request.timeout_seconds or self._settings.default_wait_seconds
            state = await conversations.wait_for_turn(conversation_id, turn_id, float(timeout))
        if state is None:
            pending = render_pending(conversation_id, turn_id)
            return _json(202, pending, headers={"Location": f"{turns_url}/{turn_id}"})
        reported_id, record = resolve_alias(state, turn_id)
        if record is None:
            raise _expired(conversation_id, reported_id)
        return _turn_response(conversation_id, state, reported_id, record, f"{turns_url}/{reported_id}")

    async def _get_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        turn_id = validate_turn_id(req.route_params.get("turnId", ""))
        state = await ConversationClient(client, agent.entity_name).read(conversation_id) or {}
        location = req.url.split("?", 1)[0]
        reported_id, record = resolve_alias(state, turn_id)
        if record is not None:
            return _turn_response(conversation_id, state, reported_id, record, location, failure_as_error=False)
        if reported_id != turn_id or turn_id in state.get(EXPIRED_TURNS_KEY, ()):
            raise _expired(conversation_id, turn_id)
        if self._may_be_pending(issued_at(turn_id), state.get("turns", {})):
            return _json(202, render_pending(conversation_id, turn_id), headers={"Location": location})
        raise TurnNotFoundError(conversation_id, turn_id)

    def _may_be_pending(self, issued: int | None, turns: Mapping[str, Any]) -> bool:
        """An unknown turn id is pending only if it was issued recently and no later turn has finished.

        Operations on one entity run in order, so a finished later turn means this one never arrived.
        """
        if issued is None:
            return False
        window_ms = (self._settings.max_wait_seconds + self._settings.run_timeout_seconds) * 1000 * 2
        if self._clock.now_ms() - issued > window_ms:
            return False
        return not any((issued_at(known) or 0) > issued for known in turns)

    async def _get_conversation(
        self, req: func.HttpRequest, client: df.DurableOrchestrationClient
    ) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        state = await self._existing(agent, conversation_id, client)
        return _json(200, _conversation_body(agent, conversation_id, state))

    async def _delete_conversation(
        self, req: func.HttpRequest, client: df.DurableOrchestrationClient
    ) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        conversations = ConversationClient(client, agent.entity_name)
        # Existence, not readability: deleting is the way out of a conversation whose stored state cannot be read.
        if not await conversations.exists(conversation_id):
            raise ConversationNotFoundError(agent.name, conversation_id)
        await conversations.signal(conversation_id, DELETE_OPERATION, {"conversationId": conversation_id})
        if not await conversations.wait_until_gone(conversation_id, DELETE_WAIT_SECONDS):
            return _json(202, {"conversationId": conversation_id, "status": "deleting"})
        return func.HttpResponse(status_code=204)

    async def _get_messages(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        include_excluded = _flag(req.params.get("includeExcluded"), "includeExcluded", default=False)
        state = await self._existing(agent, conversation_id, client)
        messages = [render_message(record, state.get("agent")) for record in state.get("messages", [])]
        if not include_excluded:
            messages = [message for message in messages if not message["excluded"]]
        return _json(200, {"conversationId": conversation_id, "messages": messages})

    async def _put_retention(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        try:
            data = json.loads(req.get_body() or b"null")
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
            raise InvalidRequestError(f"The body is not valid JSON: {exc}.", code="invalid_json") from None
        retention = validated_retention(data).model_dump(by_alias=True, mode="json")
        conversations = ConversationClient(client, agent.entity_name)
        await conversations.signal(conversation_id, SET_RETENTION_OPERATION, retention)
        state = await conversations.wait_for_retention(conversation_id, retention, self._settings.default_wait_seconds)
        if state is None:
            return _json(202, {"conversationId": conversation_id, "status": "pending", "retention": retention})
        body = {"conversationId": conversation_id, "retention": state["retention"]}
        return _json(200, {**body, "stateBytes": len(encode_state(state).encode("utf-8"))})

    # -- parsing --------------------------------------------------------------------------------

    def _agent(self, req: func.HttpRequest) -> AgentRoute:
        name = req.route_params.get("agent", "")
        agent = self._agents.get(name)
        if agent is None:
            raise AgentNotFoundError(name[:80], sorted(self._agents))
        return agent

    def _target(self, req: func.HttpRequest) -> tuple[AgentRoute, str]:
        return self._agent(req), validate_conversation_id(req.route_params.get("conversationId", ""))

    async def _existing(
        self, agent: AgentRoute, conversation_id: str, client: df.DurableOrchestrationClient
    ) -> dict[str, Any]:
        state = await ConversationClient(client, agent.entity_name).read(conversation_id)
        if state is None:
            raise ConversationNotFoundError(agent.name, conversation_id)
        return state

    def _parse_turn(self, req: func.HttpRequest) -> TurnRequest:
        text = read_body_text(req.get_body() or b"", self._settings.max_message_bytes)
        media_type = (req.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if not media_type:
            media_type = JSON_MEDIA_TYPE if text.lstrip().startswith("{") else TEXT_MEDIA_TYPE
        if media_type == JSON_MEDIA_TYPE or media_type.endswith("+json"):
            request = _turn_from_json(text)
        elif media_type == TEXT_MEDIA_TYPE:
            request = TurnRequest(
                message=text,
                wait=_flag(req.params.get("wait"), "wait", default=True),
                timeout_seconds=_seconds(req.params.get("timeoutSeconds")),
            )
        else:
            raise UnsupportedMediaTypeError(
                f"Content type '{media_type}' is not supported; send application/json "
                '({"message": "..."}) or text/plain.'
            )
        if request.message is None and not request.approvals:
            raise InvalidRequestError(
                'The body has no message; send {"message": "..."} or answers to pending approvals '
                '({"approvals": [{"id": "...", "approved": true}]}).',
                code="missing_message",
            )
        if request.message is not None and not request.message.strip():
            raise InvalidRequestError("The message is empty; send some text.", code="missing_message")
        size = len((request.message or "").encode("utf-8"))
        if size > self._settings.max_message_bytes:
            raise MessageTooLargeError(size, self._settings.max_message_bytes)
        if request.approvals is not None and len(request.approvals) > MAX_APPROVALS_PER_TURN:
            raise InvalidRequestError(
                f"A turn may answer at most {MAX_APPROVALS_PER_TURN} approvals, got {len(request.approvals)}.",
                code="too_many_approvals",
            )
        timeout = request.timeout_seconds
        if timeout is not None and not 0 < timeout <= self._settings.max_wait_seconds:
            raise InvalidRequestError(
                f"timeoutSeconds must be more than 0 and at most {self._settings.max_wait_seconds:g}, got {timeout}.",
                code="invalid_timeout",
            )
        return request


def _idempotency_key(req: func.HttpRequest) -> str | None:
    key = req.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidRequestError(
            f"The {IDEMPOTENCY_HEADER} header must be 1-255 visible ASCII characters (a UUID works well).",
            code="invalid_idempotency_key",
        )
    return key


def _expired(conversation_id: str, turn_id: str) -> TurnExpiredError:
    return TurnExpiredError(
        f"Turn '{turn_id}' of conversation '{conversation_id}' completed, but its result is older than the kept "
        "turn records (AGENT_HOST_TURN_RECORD_TTL_SECONDS, AGENT_HOST_MAX_TURN_RECORDS) and is no longer available.",
        conversation_id=conversation_id,
        turn_id=turn_id,
    )


def _turn_from_json(text: str) -> TurnRequest:
    data = parse_json_object(text, '{"message": "..."}')
    if "message" not in data and "approvals" not in data:
        raise InvalidRequestError('The body has no "message"; send {"message": "..."}.', code="missing_message")
    try:
        return TurnRequest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}" for error in exc.errors()
        )
        raise InvalidRequestError(
            f"The body does not match the turn request ({problems}). Expected "
            '{"message": string, "wait": boolean, "timeoutSeconds": number}.',
            code="invalid_body",
        ) from None


def _flag(raw: str | None, name: str, *, default: bool) -> bool:
    if raw is None:
        return default
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise InvalidRequestError(f"Query parameter {name}={raw!r} must be true or false.", code="invalid_query")


def _seconds(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidRequestError(
            f"timeoutSeconds={raw!r} is not a number of seconds.", code="invalid_timeout"
        ) from None


def _conversation_body(agent: AgentRoute, conversation_id: str, state: dict[str, Any]) -> dict[str, Any]:
    return {
        "conversationId": conversation_id,
        "agent": agent.name,
        "history": agent.history,
        "messageCount": len(state.get("messages", [])),
        "turnCount": state.get("turnCount", 0),
        "stateBytes": len(encode_state(state).encode("utf-8")),
        "retention": state.get("retention", {}),
        "truncation": state.get("truncation", {}),
        "pendingApprovals": public_view(state.get(PENDING_APPROVALS_KEY, [])),
        "createdAt": iso_time(state.get("createdAt")),
        "updatedAt": iso_time(state.get("updatedAt")),
    } | ({"capacityError": state["capacityError"]} if state.get("capacityError") else {})


def _turn_response(
    conversation_id: str,
    state: dict[str, Any],
    turn_id: str,
    record: dict[str, Any],
    location: str,
    *,
    failure_as_error: bool = True,
) -> func.HttpResponse:
    """A finished turn of the conversation `state`. A failed turn answers its error's status to the request that
    ran it, but the turn resource itself reads back with 200: the read succeeded, and `status` says it failed."""
    body = render_turn(conversation_id, turn_id, record, answer_messages(state, record), state.get("agent"))
    failed = record["status"] != "completed"
    status = status_for_code(record["error"]["code"]) if failed and failure_as_error else 200
    return _json(status, body, headers={"Location": location})


async def _respond(
    req: func.HttpRequest, methods: tuple[str, ...], handler: Callable[[], Awaitable[func.HttpResponse]]
) -> func.HttpResponse:
    try:
        if req.method.upper() not in methods:
            raise MethodNotAllowedError(f"{req.method.upper()} is not allowed here; use {' or '.join(methods)}.")
        return await handler()
    except AgentHostError as error:
        return render_error(error)
    except Exception:
        logger.exception("Unexpected error handling %s %s", req.method, req.url.split("?", 1)[0])
        return _json(500, {"error": {"code": "internal_error", "message": "The request failed unexpectedly."}})


def render_error(error: AgentHostError) -> func.HttpResponse:
    """The one rendering of every error: `{"error": {"code", "message"}}` with the error's status.

    Errors about a turn also name it, so a poller sees `status: "expired"` on the turn resource.
    """
    return _json(error.status, {**error.fields, "error": error.to_record()})


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> func.HttpResponse:
    # An echoed value may hold an unpaired surrogate; escape it as JSON would rather than fail the response.
    return func.HttpResponse(
        json.dumps(body, ensure_ascii=False).encode("utf-8", "backslashreplace"),
        status_code=status,
        mimetype=JSON_MEDIA_TYPE,
        charset="utf-8",
        headers=headers,
    )
