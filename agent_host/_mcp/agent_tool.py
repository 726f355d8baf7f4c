"""An agent's MCP tool call: one ordinary turn of a conversation, taken as `POST .../turns` takes it (`take_turn`).

The tool function never runs the agent: the conversation client signals the conversation's entity and waits for the
turn's receipt, so the HTTP API shows the turn like any other. Every call carries an idempotency key (the caller's,
or one made up here) and its turn id derives from it: a retry of a call, whether its turn is still running or
answered, never runs the agent twice. Knows the extension's invocation context and the turn's outcome; nothing of
HTTP, of the stored keys, or of how the entity runs a turn.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._clock import Clock
from .._contract import AgentRoute, validate_conversation_id
from .._conversation_client.client import ConversationClient
from .._conversation_client.in_flight import InFlight, TurnsInFlight
from .._conversation_client.owners import for_caller
from .._conversation_client.turns import Accepted, Answered, Failed, Gone, Pending, TurnAsk, take_turn
from .._errors import (
    AgentHostError,
    InvalidRequestError,
    internal_error,
)
from .._http.rendering import render_approvals
from .._settings import HostSettings
from .arguments import (
    idempotency_key_argument,
    require_size_within,
    text_argument,
    tool_arguments,
    transport_headers,
    transport_session,
)
from .results import answer_result, error_result, pending_result
from .tools import IDEMPOTENCY_KEY_PROPERTY, LEGACY_THREAD_ID_PROPERTY, QUERY_PROPERTY, SESSION_ID_PROPERTY

logger = logging.getLogger("agent_host.mcp")

# A first call with a key but no sessionId starts the conversation its key names in its MCP session, so a retry in
# that session finds the same one and another client's equal key does not.
DERIVED_SESSION_PREFIX = "mcp-"
GENERATED_KEY_PREFIX = "mcp-"


@dataclass(frozen=True)
class AgentToolCall:
    """A parsed call of an agent's tool.

    Attributes:
        query: The message for the agent.
        session_id: The conversation id (given, derived from the caller's key, or new).
        idempotency_key: The caller's key, or one made up for this call.
        caller_key: Whether the caller chose the key (only then can an earlier call have used it).
        headers: The headers of the HTTP request the call came in, which name its caller when owners are on.
    """

    query: str
    session_id: str
    idempotency_key: str
    caller_key: bool
    headers: Mapping[str, str] = field(default_factory=dict)


def parse_agent_tool_call(context: str, agent_name: str, max_message_bytes: int) -> AgentToolCall:
    """Read the extension's invocation context (`{"name", "arguments", "sessionid", ...}`) for an agent's tool.

    `sessionid` there is the MCP transport's session, not a conversation: the conversation is the `sessionId`
    argument (or the legacy `threadId`).

    Raises:
        InvalidRequestError: the context is not a JSON object, the query is missing or blank, an id or key is
            malformed, or sessionId and threadId disagree.
        MessageTooLargeError: the query is over the message size limit.
    """
    arguments = tool_arguments(context)
    query = arguments.get(QUERY_PROPERTY)
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequestError(
            f"The {QUERY_PROPERTY!r} argument is required: send the message for the agent as a non-empty string.",
            code="missing_message",
        )
    require_size_within(query, max_message_bytes, "query")
    key = idempotency_key_argument(arguments)
    session_id = _session_id(arguments)
    if session_id is None and key is not None:
        session_id = _derived_session_id(agent_name, transport_session(context), key)
    elif session_id is None:
        session_id = uuid.uuid4().hex
    return AgentToolCall(
        query=query,
        session_id=session_id,
        idempotency_key=key if key is not None else f"{GENERATED_KEY_PREFIX}{uuid.uuid4().hex}",
        caller_key=key is not None,
        headers=transport_headers(context),
    )


def _session_id(arguments: Mapping[str, Any]) -> str | None:
    """The conversation the call continues: `sessionId`, or the legacy `threadId`; None for a new one.

    Raises:
        InvalidRequestError: an id is malformed, or the two name different conversations.
    """
    given = {
        name: value
        for name in (SESSION_ID_PROPERTY, LEGACY_THREAD_ID_PROPERTY)
        if (value := text_argument(arguments, name, "invalid_conversation_id")) is not None
    }
    if len(set(given.values())) > 1:
        listed = ", ".join(f"{name}={value!r}" for name, value in given.items())
        raise InvalidRequestError(
            f"Conflicting session identifiers supplied: {listed}. Send sessionId alone.", code="conflicting_session_id"
        )
    return validate_conversation_id(next(iter(given.values()))) if given else None


def _derived_session_id(agent_name: str, mcp_session: str | None, key: str) -> str:
    """The conversation a call with this key and no sessionId starts: the same for every retry of the call in its MCP
    session, and another for an equal key of another client (its own session).

    Raises:
        InvalidRequestError: the call came in no MCP session, so nothing tells its client from another.
    """
    if mcp_session is None:
        raise InvalidRequestError(
            f"{IDEMPOTENCY_KEY_PROPERTY} without {SESSION_ID_PROPERTY} names a conversation of the caller's MCP "
            f"session, and this call came in none. Send {SESSION_ID_PROPERTY} (a conversation id of your choosing) "
            "with the key, or call within an MCP session.",
            code="invalid_idempotency_key",
        )
    digest = hashlib.sha256(f"{agent_name}\n{mcp_session}\n{key}".encode()).hexdigest()[:32]
    return f"{DERIVED_SESSION_PREFIX}{digest}"


async def run_agent_tool(
    context: str,
    conversations: ConversationClient,
    agent: AgentRoute,
    settings: HostSettings,
    clock: Clock,
    wait_seconds: float,
    in_flight: TurnsInFlight,
) -> str:
    """Serve one call of an agent's tool on the agent's `conversations`, waiting up to `wait_seconds` for the answer,
    and return the tool result (see `results.py`). The turn is listed among its conversation's turns in flight, as
    every front door's is, so `ifBusy` and cancel on `POST .../turns` see it.

    Every failure, the call's own or its turn's, is a tool error result with a code and a message; nothing raises
    to the extension, which would hide both behind a generic message.
    """
    session_id: str | None = None
    try:
        call = parse_agent_tool_call(context, agent.name, settings.max_message_bytes)
        validate_conversation_id(call.session_id, agent)  # the backend's limit on the agent's entity ids
        session_id = call.session_id
        turns_in_flight = in_flight.of(agent.entity_name, session_id)
        return await _run_turn(call, conversations, agent, clock, wait_seconds, turns_in_flight)
    except AgentHostError as error:
        return error_result(error.to_record(), session_id=session_id)
    except Exception:
        logger.exception("Unexpected error serving an MCP call of agent %r", agent.name)
        return error_result(internal_error().to_record(), session_id=session_id)


async def _run_turn(
    call: AgentToolCall,
    conversations: ConversationClient,
    agent: AgentRoute,
    clock: Clock,
    waited: float,
    in_flight: InFlight | None,
) -> str:
    """Take the turn (unless the key already has one) and answer from its outcome.

    Raises:
        ConversationNotFoundError: the conversation was deleted with the turn.
        TurnExpiredError: the turn ran but its record is no longer kept.
        IdempotencyConflictError: the key's turn asked something else.
    """
    ask = TurnAsk(
        call.session_id,
        {"message": call.query},
        idempotency_key=call.idempotency_key,
        caller_key=call.caller_key,
        wait_seconds=waited,
    )
    match await take_turn(for_caller(conversations, agent.owners, call.headers), ask, clock, in_flight):
        case Answered(turn):
            return answer_result(
                agent.name, call.session_id, turn.turn_id, turn.text, render_approvals(turn.approval_requests)
            )
        case Failed(turn) as failed:
            return error_result(failed.error, session_id=call.session_id, turn_id=turn.turn_id)
        case Accepted(turn_id) | Pending(turn_id):
            return pending_result(agent.name, call.session_id, turn_id, call.idempotency_key, waited)
        case Gone(_, error):
            raise error
