"""Stored records as the API shows them: turns, messages and conversations, in camelCase with readable times.

Knows the stored record shapes (`_conversation/state.py`), not how the entity produces or keeps them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from agent_framework import (
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    GROUP_ID_KEY,
    GROUP_KIND_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
    AgentResponse,
)

from .._contract import AgentRoute
from .._conversation.approvals import public_view
from .._conversation.state import (
    AGENT_KEY,
    CAPACITY_ERROR_KEY,
    CREATED_AT_KEY,
    IMPORTED_FROM_KEY,
    MESSAGES_KEY,
    PENDING_APPROVALS_KEY,
    RETENTION_KEY,
    STRUCTURED_KEY,
    TRUNCATION_KEY,
    TURN_COUNT_KEY,
    UPDATED_AT_KEY,
    StoredState,
    encode_state,
)
from .._conversation.turn_records import answer_messages, turn_text
from .._records import message_text, record_author, record_to_message


def iso_time(epoch_ms: int | None) -> str | None:
    """Milliseconds since the epoch as an ISO 8601 UTC timestamp."""
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render_message(record: dict[str, Any], agent_name: str | None) -> dict[str, Any]:
    """A stored message as the API shows it, with compaction's annotations made readable.

    `agent_name` is the conversation's agent, whose name its assistant messages imply.
    """
    contents = record.get("contents")
    if contents is None:
        contents = [{"type": "text", "text": record.get("text", "")}]
    props: dict[str, Any] = record.get("props") or {}
    body: dict[str, Any] = {
        "messageId": record["id"],
        "role": record["role"],
        "text": message_text(record),
        "contents": contents,
        "createdAt": iso_time(record.get("at")),
        "excluded": bool(props.get(EXCLUDED_KEY, False)),
    }
    author = record_author(record, agent_name)
    if author:
        body["authorName"] = author
    if props.get(EXCLUDE_REASON_KEY):
        body["excludeReason"] = props[EXCLUDE_REASON_KEY]
    group = props.get(GROUP_ANNOTATION_KEY)
    if isinstance(group, dict):
        # Core's annotation keys, renamed for readers: the group a message belongs to, and the summary links.
        if group.get(GROUP_ID_KEY):
            body["group"] = {"id": group[GROUP_ID_KEY], "kind": group.get(GROUP_KIND_KEY)}
        if group.get(SUMMARY_OF_MESSAGE_IDS_KEY):
            body["summaryOf"] = list(group[SUMMARY_OF_MESSAGE_IDS_KEY])
        if group.get(SUMMARIZED_BY_SUMMARY_ID_KEY):
            body["summarizedBy"] = group[SUMMARIZED_BY_SUMMARY_ID_KEY]
    if props:
        body["annotations"] = props
    return body


def render_turn(conversation_id: str, turn_id: str, record: dict[str, Any], state: StoredState) -> dict[str, Any]:
    """A turn record of the conversation `state` as the body of a turn response."""
    body: dict[str, Any] = {"conversationId": conversation_id, "turnId": turn_id, "status": record["status"]}
    if record["status"] == "completed":
        messages = answer_messages(state, record)
        body["text"] = turn_text(messages)
        body["messages"] = [render_message(message, state.get(AGENT_KEY)) for message in messages]
        if record.get(STRUCTURED_KEY):
            body["value"] = json.loads(body["text"])  # the entity checked it against the schema
        body["usage"] = record.get("usage") or {}
        body["approvalRequests"] = record.get("approvalRequests", [])
    else:
        body["error"] = record["error"]
    body["completedAt"] = iso_time(record.get("at"))
    return body


def agent_response(messages: list[dict[str, Any]], state: StoredState, turn_id: str) -> dict[str, Any]:
    """A completed turn's answer as core's `AgentResponse.to_dict()` (the `/run` route's `agent_response`)."""
    agent = state.get(AGENT_KEY)
    response = AgentResponse(
        messages=[record_to_message(message, agent) for message in messages], response_id=turn_id, agent_id=agent
    )
    return response.to_dict()


def render_pending(conversation_id: str, turn_id: str) -> dict[str, Any]:
    """The body of a turn that has not finished yet."""
    return {"conversationId": conversation_id, "turnId": turn_id, "status": "pending"}


def render_conversation(agent: AgentRoute, conversation_id: str, state: StoredState) -> dict[str, Any]:
    """A conversation's summary: sizes, retention, truncation and pending approvals."""
    body = {
        "conversationId": conversation_id,
        "agent": agent.name,
        "history": agent.history,
        "messageCount": len(state.get(MESSAGES_KEY, [])),
        "turnCount": state.get(TURN_COUNT_KEY, 0),
        "stateBytes": len(encode_state(state).encode("utf-8")),
        "retention": state.get(RETENTION_KEY, {}),
        "truncation": state.get(TRUNCATION_KEY, {}),
        "pendingApprovals": public_view(state.get(PENDING_APPROVALS_KEY, [])),
        "createdAt": iso_time(state.get(CREATED_AT_KEY)),
        "updatedAt": iso_time(state.get(UPDATED_AT_KEY)),
    }
    if state.get(CAPACITY_ERROR_KEY):
        body["capacityError"] = state[CAPACITY_ERROR_KEY]
    if state.get(IMPORTED_FROM_KEY):
        body["importedFrom"] = {**state[IMPORTED_FROM_KEY], "at": iso_time(state[IMPORTED_FROM_KEY]["at"])}
    return body
