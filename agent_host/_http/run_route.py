"""`POST /api/agents/{agent}/run`: the request and answer shapes of Microsoft's agent-framework-azurefunctions.

Existing clients of that host work unchanged against the same conversation entities. One deliberate difference:
a wait that times out answers 202 with the turn's `Location` (that host answers 500 "timeout").
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from .._clock import Clock
from .._contract import RUN_OPERATION, AgentRoute, RunRequestBody, parse_model, validate_conversation_id
from .._conversation.state import DELETED_KEY, MESSAGES_KEY, TURN_COUNT_KEY
from .._conversation.turn_records import answer_messages, find_turn, new_turn_id, turn_text
from .._errors import (
    ConversationNotFoundError,
    InvalidRequestError,
    MessageTooLargeError,
    TurnExpiredError,
    status_for_code,
)
from .._expiry.starter import TurnExpiry
from .._settings import HostSettings
from .durable_client import ConversationClient
from .requests import JSON_MEDIA_TYPE, body_text, is_json_type, json_object, media_type

SESSION_ID_FIELD = "session_id"
LEGACY_THREAD_ID_FIELD = "thread_id"
SESSION_ID_HEADER = "x-ms-session-id"
WAIT_HEADER = "x-ms-wait-for-response"
WAIT_FIELD = "wait_for_response"
_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}
_RUN_SHAPE = '{"message": "...", "session_id": "..."}'


@dataclass(frozen=True)
class RunRequest:
    """A parsed `/run` request: the message, the conversation it belongs to, and how to answer."""

    message: str
    session_id: str
    wait: bool
    answer_json: bool


def parse_run_request(req: func.HttpRequest, settings: HostSettings, agent: AgentRoute | None = None) -> RunRequest:
    """Read a `/run` request: JSON or plain text; `session_id` or legacy `thread_id` in body or query.

    Raises:
        InvalidRequestError: malformed JSON, missing message, conflicting or invalid session ids.
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
    fields = body.model_dump(exclude_none=True)
    return RunRequest(
        message=message,
        session_id=_session_id(fields, req.params or {}, agent),
        wait=_wait(headers, req.params or {}, fields),
        answer_json=is_json or accepts_json,
    )


def _session_id(body: Mapping[str, Any], query: Mapping[str, str], agent: AgentRoute | None) -> str:
    candidates: dict[str, str] = {}
    for source_name, source in (("body", body), ("query", query)):
        for field in (SESSION_ID_FIELD, LEGACY_THREAD_ID_FIELD):
            value = source.get(field)
            if value is not None and str(value).strip():
                candidates[f"{field} in the {source_name}"] = str(value)
    distinct = set(candidates.values())
    if len(distinct) > 1:
        listed = ", ".join(f"{name}={value!r}" for name, value in sorted(candidates.items()))
        raise InvalidRequestError(f"Conflicting session identifiers supplied: {listed}.", code="conflicting_session_id")
    return validate_conversation_id(distinct.pop(), agent) if distinct else uuid.uuid4().hex


def _wait(headers: Mapping[str, str], query: Mapping[str, str], body: Mapping[str, Any]) -> bool:
    # That host's precedence: the header, then the query, then the body; an unreadable value falls through.
    for value in (headers.get(WAIT_HEADER), query.get(WAIT_FIELD), body.get(WAIT_FIELD)):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
    return True


async def run_compat(
    req: func.HttpRequest,
    client: df.DurableOrchestrationClient,
    agent: AgentRoute,
    settings: HostSettings,
    clock: Clock,
) -> func.HttpResponse:
    """Run one turn for a `/run` request and answer in that host's shape."""
    request = parse_run_request(req, settings, agent)
    conversations = ConversationClient(client, agent.entity_name)
    turn_id = new_turn_id(clock.now_ms())
    await conversations.signal(request.session_id, RUN_OPERATION, {"turnId": turn_id, "message": request.message})
    expiry = TurnExpiry(client, agent, request.session_id, clock)
    agent_url = req.url.split("?", 1)[0].rstrip("/").removesuffix("/run")
    turn_url = f"{agent_url}/conversations/{request.session_id}/turns/{turn_id}"
    base = {"message": request.message, SESSION_ID_FIELD: request.session_id, "correlation_id": turn_id}
    if not request.wait:
        await expiry.finish()
        return _answer(request, 202, {"response": "Agent request accepted", **base, "status": "accepted"}, turn_url)
    state = await conversations.wait_for_turn(request.session_id, turn_id, settings.default_wait_seconds)
    await expiry.finish((state or {}).get(TURN_COUNT_KEY))
    if state is None:
        pending = {"response": "Agent is still processing.", **base, "status": "pending"}
        return _answer(request, 202, pending, turn_url)
    _, record = find_turn(state, turn_id)
    if record is None or record["status"] != "completed":
        if record is not None:
            error = record["error"]
        elif DELETED_KEY in state:
            error = ConversationNotFoundError(agent.name, request.session_id, deleted=True).to_record()
        else:
            error = TurnExpiredError(request.session_id, turn_id).to_record()
        failed = {"response": None, **base, "status": "failed", "error": error}
        return _answer(request, status_for_code(error["code"]), failed, turn_url)
    answer = {**base, "response": turn_text(answer_messages(state, record)), "status": "success"}
    answer["message_count"] = len(state.get(MESSAGES_KEY, []))
    return _answer(request, 200, answer, turn_url)


def _answer(request: RunRequest, status: int, payload: dict[str, Any], turn_url: str) -> func.HttpResponse:
    headers = {SESSION_ID_HEADER: request.session_id}
    if status == 202:
        headers["Location"] = turn_url
    if request.answer_json:
        return func.HttpResponse(json.dumps(payload), status_code=status, mimetype=JSON_MEDIA_TYPE, headers=headers)
    error = payload.get("error") or {}
    text = payload.get("response") or error.get("message") or payload["status"]
    return func.HttpResponse(str(text), status_code=status, mimetype="text/plain", headers=headers)
