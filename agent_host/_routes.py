"""HTTP trigger handlers: parse, signal the conversation's entity, wait, render. Knows the contract, not the storage.

Handlers raise `AgentHostError`s; `render_error` is the one place that turns an error into an HTTP response.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from pydantic import ValidationError

from ._contract import (
    TurnRequest,
    iso_time,
    render_message,
    render_pending,
    render_turn,
    validate_conversation_id,
    validate_turn_id,
)
from ._delivery import new_turn_id
from ._durable_client import ConversationClient
from ._entity import DELETE_OPERATION, RUN_OPERATION
from ._errors import (
    AgentHostError,
    AgentNotFoundError,
    ConversationNotFoundError,
    InvalidRequestError,
    MessageTooLargeError,
    MethodNotAllowedError,
    TurnNotFoundError,
    UnsupportedMediaTypeError,
    status_for_code,
)
from ._settings import HostSettings
from ._state import encode_state

logger = logging.getLogger("agent_host.http")

JSON_MEDIA_TYPE = "application/json"
TEXT_MEDIA_TYPE = "text/plain"
# A turn id starts with its issue time in milliseconds, as 11 hex digits (see `new_turn_id`).
_TURN_TIME_DIGITS = 11
DELETE_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class AgentRoute:
    """What the HTTP side knows about a registered agent: its name and its entity's name."""

    name: str
    entity_name: str
    history: str


Handler = Callable[..., Awaitable[func.HttpResponse]]


class Routes:
    """The handlers behind every route; one instance per app, reading the app's registered agents."""

    def __init__(self, agents: Mapping[str, AgentRoute], settings: HostSettings) -> None:
        self._agents = agents
        self._settings = settings

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

    # -- handlers -------------------------------------------------------------------------------

    async def _health(self) -> func.HttpResponse:
        agents = [{"name": route.name} for route in self._agents.values()]
        return _json(200, {"status": "healthy", "agents": agents})

    async def _post_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        request = self._parse_turn(req)
        conversations = ConversationClient(client, agent.entity_name)
        turn_id = new_turn_id()
        await conversations.signal(conversation_id, RUN_OPERATION, {"turnId": turn_id, "message": request.message})
        location = req.url.split("?", 1)[0].rstrip("/") + "/" + turn_id
        record = None
        if request.wait:
            timeout = request.timeout_seconds or self._settings.default_wait_seconds
            record = await conversations.wait_for_turn(conversation_id, turn_id, float(timeout))
        if record is None:
            return _json(202, render_pending(conversation_id, turn_id), headers={"Location": location})
        return _turn_response(conversation_id, turn_id, record, location)

    async def _get_turn(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        turn_id = validate_turn_id(req.route_params.get("turnId", ""))
        state = await ConversationClient(client, agent.entity_name).read(conversation_id)
        turns: dict[str, Any] = (state or {}).get("turns", {})
        record = turns.get(turn_id)
        if record is not None:
            return _turn_response(conversation_id, turn_id, record, req.url.split("?", 1)[0])
        if self._may_be_pending(turn_id, turns):
            return _json(202, render_pending(conversation_id, turn_id), headers={"Location": req.url.split("?", 1)[0]})
        raise TurnNotFoundError(conversation_id, turn_id)

    def _may_be_pending(self, turn_id: str, turns: Mapping[str, Any]) -> bool:
        """An unknown turn id is pending only if it was issued recently and no later turn has finished.

        Operations on one entity run in order, so a finished later turn means this one never arrived.
        """
        try:
            issued_ms = int(turn_id[:_TURN_TIME_DIGITS], 16)
        except ValueError:
            return False
        window_ms = (self._settings.max_wait_seconds + self._settings.run_timeout_seconds) * 1000 * 2
        if time.time() * 1000 - issued_ms > window_ms:
            return False
        prefix = turn_id[:_TURN_TIME_DIGITS]
        return not any(known[:_TURN_TIME_DIGITS] > prefix for known in turns)

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
        await self._existing(agent, conversation_id, client)
        conversations = ConversationClient(client, agent.entity_name)
        await conversations.signal(conversation_id, DELETE_OPERATION, {"conversationId": conversation_id})
        if not await conversations.wait_until_gone(conversation_id, DELETE_WAIT_SECONDS):
            return _json(202, {"conversationId": conversation_id, "status": "deleting"})
        return func.HttpResponse(status_code=204)

    async def _get_messages(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        agent, conversation_id = self._target(req)
        include_excluded = _flag(req.params.get("includeExcluded"), "includeExcluded", default=False)
        state = await self._existing(agent, conversation_id, client)
        messages = [render_message(record) for record in state.get("messages", [])]
        if not include_excluded:
            messages = [message for message in messages if not message["excluded"]]
        return _json(200, {"conversationId": conversation_id, "messages": messages})

    # -- parsing --------------------------------------------------------------------------------

    def _target(self, req: func.HttpRequest) -> tuple[AgentRoute, str]:
        name = req.route_params.get("agent", "")
        agent = self._agents.get(name)
        if agent is None:
            raise AgentNotFoundError(name[:80], sorted(self._agents))
        return agent, validate_conversation_id(req.route_params.get("conversationId", ""))

    async def _existing(
        self, agent: AgentRoute, conversation_id: str, client: df.DurableOrchestrationClient
    ) -> dict[str, Any]:
        state = await ConversationClient(client, agent.entity_name).read(conversation_id)
        if state is None:
            raise ConversationNotFoundError(agent.name, conversation_id)
        return state

    def _parse_turn(self, req: func.HttpRequest) -> TurnRequest:
        body = req.get_body() or b""
        limit = self._settings.max_message_bytes * 6 + 4096  # JSON escaping can grow a message six-fold
        if len(body) > limit:
            raise MessageTooLargeError(len(body), limit, what="request body")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidRequestError(
                f"The body is not valid UTF-8 (byte {exc.start}). Send UTF-8 text.", code="invalid_encoding"
            ) from None
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
        if not request.message.strip():
            raise InvalidRequestError("The message is empty; send some text.", code="missing_message")
        size = len(request.message.encode("utf-8"))
        if size > self._settings.max_message_bytes:
            raise MessageTooLargeError(size, self._settings.max_message_bytes)
        timeout = request.timeout_seconds
        if timeout is not None and not 0 < timeout <= self._settings.max_wait_seconds:
            raise InvalidRequestError(
                f"timeoutSeconds must be more than 0 and at most {self._settings.max_wait_seconds:g}, got {timeout}.",
                code="invalid_timeout",
            )
        return request


def _turn_from_json(text: str) -> TurnRequest:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidRequestError(f"The body is not valid JSON: {exc}.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(
            f'The body must be a JSON object like {{"message": "..."}}, got {type(data).__name__}.',
            code="invalid_json",
        )
    if "message" not in data:
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
        "createdAt": iso_time(state.get("createdAt")),
        "updatedAt": iso_time(state.get("updatedAt")),
    }


def _turn_response(conversation_id: str, turn_id: str, record: dict[str, Any], location: str) -> func.HttpResponse:
    body = render_turn(conversation_id, turn_id, record)
    status = 200 if record["status"] == "completed" else status_for_code(record["error"]["code"])
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
    """The one rendering of every error: `{"error": {"code", "message"}}` with the error's status."""
    return _json(error.status, {"error": error.to_record()})


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> func.HttpResponse:
    return func.HttpResponse(
        json.dumps(body, ensure_ascii=False),
        status_code=status,
        mimetype=JSON_MEDIA_TYPE,
        charset="utf-8",
        headers=headers,
    )
