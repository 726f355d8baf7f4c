"""`POST /api/agents/{agent}/run`: the request and answer shapes of Microsoft's agent-framework-azurefunctions.

Existing clients of that host work unchanged against the same conversation entities. Deliberate differences: a
wait that times out answers 202 with the turn's `Location` (that host answers 500 "timeout"), and `response_format`
(a JSON schema) and `enable_tool_calls: false` do what they say (that host answers 500 for the first and ignores the
second; docs/migrating.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import azure.functions as func
from pydantic.alias_generators import to_camel

from .._clock import Clock
from .._contract import AgentRoute, RunRequestBody, parse_model, validate_conversation_id
from .._conversation_client.client import ConversationClient
from .._conversation_client.in_flight import InFlight
from .._conversation_client.turns import Accepted, Answered, Failed, Gone, Pending, TurnAsk, take_turn
from .._errors import (
    InvalidRequestError,
    MessageTooLargeError,
    status_for_code,
)
from .._settings import HostSettings
from .._structured_output import response_format_of
from .rendering import agent_response
from .requests import JSON_MEDIA_TYPE, body_text, is_json_type, json_object, media_type

SESSION_ID_FIELD = "session_id"
LEGACY_THREAD_ID_FIELD = "thread_id"
SESSION_ID_HEADER = "x-ms-session-id"
WAIT_HEADER = "x-ms-wait-for-response"
WAIT_FIELD = "wait_for_response"
ROLES = ("user", "system", "assistant")
_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}
_RUN_SHAPE = '{"message": "...", "session_id": "..."}'


@dataclass(frozen=True)
class RunRequest:
    """A parsed `/run` request: the message, the conversation it belongs to, how to run the turn and how to answer.

    Attributes:
        message: The message's text.
        session_id: The conversation id.
        wait: Whether to wait for the answer.
        answer_json: Whether to answer JSON (else the answer's text).
        role: The message's role.
        response_format: The structured output asked for (core's chat-style form), or None.
        enable_tool_calls: False to run the turn with none of the agent's tools.
    """

    message: str
    session_id: str
    wait: bool
    answer_json: bool
    role: str = "user"
    response_format: dict[str, Any] | None = None
    enable_tool_calls: bool = True

    def asked(self) -> dict[str, Any]:
        """What the turn asks, as the entity's `run` operation's fields (only what differs from a plain user turn)."""
        operation: dict[str, Any] = {"message": self.message}
        if self.role != "user":
            operation["role"] = self.role
        if self.response_format is not None:
            operation["responseFormat"] = self.response_format
        if not self.enable_tool_calls:
            operation["enableToolCalls"] = False
        return operation


def parse_run_request(req: func.HttpRequest, settings: HostSettings, agent: AgentRoute | None = None) -> RunRequest:
    """Read a `/run` request: JSON or plain text; `session_id` (`sessionId`) or legacy `thread_id` (`threadId`) in
    body or query; each published field in its snake_case or camelCase spelling.

    Raises:
        InvalidRequestError: malformed JSON, missing message, conflicting or invalid session ids, one field given
            twice with different values, or an invalid role, response format or tool switch.
        MessageTooLargeError: the message is over the size limit.
    """
    headers = {key.lower(): value for key, value in req.headers.items()}
    is_json = is_json_type(media_type(req))
    text = body_text(req, settings.max_message_bytes)
    body = RunRequestBody()
    if is_json and text.strip():
        body = parse_model(RunRequestBody, json_object(text, _RUN_SHAPE))
    message = body.message if is_json else text.strip()
    if not message.strip():
        raise InvalidRequestError("Message is required.", code="missing_message")
    size = len(message.encode("utf-8"))
    if size > settings.max_message_bytes:
        raise MessageTooLargeError(size, settings.max_message_bytes)
    accepts_json = any(
        part.split(";", 1)[0].strip().lower() == JSON_MEDIA_TYPE for part in headers.get("accept", "").split(",")
    )
    query = req.params or {}
    sessions = {
        f"{name} in the body": value
        for name, value in (
            (SESSION_ID_FIELD, body.session_id),
            ("sessionId", body.session_id_camel),
            (LEGACY_THREAD_ID_FIELD, body.thread_id),
            ("threadId", body.thread_id_camel),
        )
    }
    for name in (SESSION_ID_FIELD, "sessionId", LEGACY_THREAD_ID_FIELD, "threadId"):
        sessions[f"{name} in the query"] = query.get(name)
    body_wait = _one_of(body.wait_for_response, body.wait_for_response_camel, WAIT_FIELD)
    query_wait = query.get(WAIT_FIELD, query.get("waitForResponse"))
    return RunRequest(
        message=message,
        session_id=_session_id(sessions, agent),
        wait=_wait((headers.get(WAIT_HEADER), query_wait, body_wait)),
        answer_json=is_json or accepts_json,
        role=_role(body.role),
        response_format=_response_format(_one_of(body.response_format, body.response_format_camel, "response_format")),
        enable_tool_calls=_tool_calls(
            _one_of(body.enable_tool_calls, body.enable_tool_calls_camel, "enable_tool_calls")
        ),
    )


def _one_of(snake: Any, camel: Any, name: str) -> Any:
    """A field sent in either spelling; the same value in both is fine.

    Raises:
        InvalidRequestError: the two spellings carry different values (`invalid_body`).
    """
    if snake is not None and camel is not None and snake != camel:
        raise InvalidRequestError(
            f"The body gives {name} and {to_camel(name)} different values ({snake!r} and {camel!r}); send one.",
            code="invalid_body",
        )
    return snake if snake is not None else camel


def _session_id(candidates: Mapping[str, Any], agent: AgentRoute | None) -> str:
    given = {name: str(value) for name, value in candidates.items() if value is not None and str(value).strip()}
    distinct = set(given.values())
    if len(distinct) > 1:
        listed = ", ".join(f"{name}={value!r}" for name, value in sorted(given.items()))
        raise InvalidRequestError(f"Conflicting session identifiers supplied: {listed}.", code="conflicting_session_id")
    return validate_conversation_id(distinct.pop(), agent) if distinct else uuid.uuid4().hex


def _flag(value: Any) -> bool | None:
    """A switch as that host reads one: a boolean, a number (0 is false), or a word such as "yes"; None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None


def _wait(sources: tuple[Any, ...]) -> bool:
    # That host's precedence: the header, then the query, then the body; an unreadable value falls through.
    return next((flag for flag in map(_flag, sources) if flag is not None), True)


def _tool_calls(value: Any) -> bool:
    if value is None:
        return True
    flag = _flag(value)
    if flag is None:
        raise InvalidRequestError(
            f"enable_tool_calls must be true or false, got {value!r}; nothing was run.", code="invalid_body"
        )
    return flag


def _role(value: Any) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return "user"
    role = value.strip().lower() if isinstance(value, str) else None
    if role not in ROLES:
        raise InvalidRequestError(
            f"role must be one of {', '.join(ROLES)}, got {value!r}; nothing was run.", code="invalid_role"
        )
    return role


def _response_format(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        return response_format_of(value)
    except ValueError as exc:
        raise InvalidRequestError(
            f"response_format is not usable: {exc}. Send a JSON schema such as "
            '{"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}.',
            code="invalid_response_format",
        ) from None


async def run_compat(
    req: func.HttpRequest,
    conversations: Callable[[], ConversationClient],
    agent: AgentRoute,
    settings: HostSettings,
    clock: Clock,
    wait_seconds: float,
    in_flight: Callable[[str], InFlight | None],
) -> func.HttpResponse:
    """Run one turn for a `/run` request and answer in that host's shape, waiting up to `wait_seconds`; the turn is
    listed among its conversation's turns in flight (`in_flight`), so `ifBusy` on `POST .../turns` sees it.

    `conversations()` gives the caller's conversations once the request is known to be valid."""
    request = parse_run_request(req, settings, agent)
    ask = TurnAsk(request.session_id, request.asked(), wait_seconds=wait_seconds if request.wait else None)
    outcome = await take_turn(conversations(), ask, clock, in_flight(request.session_id))
    turn_id = outcome.turn.turn_id if isinstance(outcome, Answered | Failed) else outcome.turn_id
    agent_url = req.url.split("?", 1)[0].rstrip("/").removesuffix("/run")
    turn_url = f"{agent_url}/conversations/{request.session_id}/turns/{turn_id}"
    base = {"message": request.message, SESSION_ID_FIELD: request.session_id, "correlation_id": turn_id}
    match outcome:
        case Accepted():
            return _answer(request, 202, {"response": "Agent request accepted", **base, "status": "accepted"}, turn_url)
        case Pending():
            pending = {"response": "Agent is still processing.", **base, "status": "pending"}
            return _answer(request, 202, pending, turn_url)
        case Failed():
            return _failed(request, base, outcome.error, turn_url)
        case Gone(_, error):
            return _failed(request, base, error.to_record(), turn_url)
        case Answered(turn, conversation):
            answer: dict[str, Any] = {**base, "response": turn.text, "status": "success"}
            if turn.structured:
                answer["value"] = turn.value
            answer["message_count"] = len(conversation.messages)
            answer["agent_response"] = agent_response(turn, conversation.agent_name)
            return _answer(request, 200, answer, turn_url)


def _failed(request: RunRequest, base: dict[str, Any], error: dict[str, str], turn_url: str) -> func.HttpResponse:
    failed = {"response": None, **base, "status": "failed", "error": error}
    return _answer(request, status_for_code(error["code"]), failed, turn_url)


def _answer(request: RunRequest, status: int, payload: dict[str, Any], turn_url: str) -> func.HttpResponse:
    headers = {SESSION_ID_HEADER: request.session_id}
    if status == 202:
        headers["Location"] = turn_url
    if request.answer_json:
        return func.HttpResponse(json.dumps(payload), status_code=status, mimetype=JSON_MEDIA_TYPE, headers=headers)
    error = payload.get("error") or {}
    text = payload.get("response") or error.get("message") or payload["status"]
    return func.HttpResponse(str(text), status_code=status, mimetype="text/plain", headers=headers)
