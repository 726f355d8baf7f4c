"""The conversation as the API shows it: turns, messages and conversations, in camelCase with readable times.

Renders the conversation's read model (`_conversation/view.py`) and message records (`_records.py`); knows no stored
key, nor how the entity produces or keeps what it renders.
"""

from __future__ import annotations

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
from .._conversation.approvals import DECLINED_BECAUSE_KEY, EXPIRED
from .._conversation.view import ConversationView, TurnView
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


def render_approvals(approvals: list[dict[str, Any]], now_ms: int | None = None) -> list[dict[str, Any]]:
    """Tool approvals as the API shows them: `expiresAt` readable; with `now_ms`, whether it has passed."""
    rendered = []
    for approval in approvals:
        expires_at = approval.get("expiresAt")
        if expires_at is None:
            rendered.append(approval)
            continue
        body = {**approval, "expiresAt": iso_time(expires_at)}
        if now_ms is not None:
            body["expired"] = expires_at <= now_ms
        rendered.append(body)
    return rendered


def render_turn(conversation_id: str, turn: TurnView, agent_name: str | None) -> dict[str, Any]:
    """A turn receipt of a conversation of the agent `agent_name` as the body of a turn response."""
    body: dict[str, Any] = {"conversationId": conversation_id, "turnId": turn.turn_id, "status": turn.status}
    if turn.cancel is not None:
        body["cancel"] = turn.cancel
    if turn.completed or turn.cancelled:
        body["text"] = turn.text
        body["messages"] = [render_message(message, agent_name) for message in turn.answer]
        if turn.structured:
            body["value"] = turn.value
        body["usage"] = turn.usage
        body["approvalRequests"] = render_approvals(turn.approval_requests)
    else:
        body["error"] = turn.error
    if turn.expired_approvals:
        # Declined by the host, not the caller: said once here and on each declined response in the transcript.
        body["expiredApprovals"] = [
            {**approval, DECLINED_BECAUSE_KEY: EXPIRED} for approval in render_approvals(turn.expired_approvals)
        ]
    body["completedAt"] = iso_time(turn.completed_at)
    return body


def agent_response(turn: TurnView, agent_name: str | None) -> dict[str, Any]:
    """A completed turn's answer as core's `AgentResponse.to_dict()` (the `/run` route's `agent_response`)."""
    response = AgentResponse(
        messages=[record_to_message(message, agent_name) for message in turn.answer],
        response_id=turn.turn_id,
        agent_id=agent_name,
    )
    return response.to_dict()


def render_pending(conversation_id: str, turn_id: str) -> dict[str, Any]:
    """The body of a turn that has not finished yet."""
    return {"conversationId": conversation_id, "turnId": turn_id, "status": "pending"}


def render_conversation(
    agent: AgentRoute, conversation_id: str, conversation: ConversationView, now_ms: int
) -> dict[str, Any]:
    """A conversation's summary: sizes, retention, truncation and pending approvals (each past its lifetime at
    `now_ms` shown `expired`, without writing: the next turn declines it)."""
    body = {
        "conversationId": conversation_id,
        "agent": agent.name,
        "history": agent.history,
        "messageCount": len(conversation.messages),
        "turnCount": conversation.turn_count,
        "stateBytes": conversation.state_bytes,
        "retention": conversation.retention,
        "truncation": conversation.truncation,
        "pendingApprovals": render_approvals(conversation.pending_approvals, now_ms),
        "createdAt": iso_time(conversation.created_at),
        "updatedAt": iso_time(conversation.updated_at),
    }
    if conversation.capacity_error:
        body["capacityError"] = conversation.capacity_error
    if conversation.imported_from:
        body["importedFrom"] = {**conversation.imported_from, "at": iso_time(conversation.imported_at)}
    return body
