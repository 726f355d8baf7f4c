"""Tool approvals across turns: the requests a turn leaves pending, and the answers the next turn brings.

A pending request is kept in the conversation state with the core content it came from, so the answer can be
turned back into core's `function_approval_response` after any cold start. Knows nothing about HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import AgentResponse, Content

from .._errors import ApprovalAnsweredError, UnknownApprovalError

APPROVAL_RESPONSE_TYPE = "function_approval_response"


def pending_from_response(response: AgentResponse) -> list[dict[str, Any]]:
    """The approval requests a run ended with, in their stored form."""
    pending = []
    for request in response.user_input_requests:
        if request.type != "function_approval_request" or request.function_call is None:
            continue
        call = request.function_call
        reason = request.additional_properties.get("reason")
        pending.append(
            {
                "id": request.id,
                "toolName": call.name,
                "arguments": _arguments(call.arguments),
                "request": request.to_dict(),
                # Why the host asks, when it asks on its own (a tool a re-run turn cannot tell has run).
                **({"reason": reason} if isinstance(reason, str) else {}),
            }
        )
    return pending


def public_view(pending: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a caller sees of pending approvals: id, tool name and arguments, and why when the host says."""
    return [{key: item[key] for key in ("id", "toolName", "arguments", "reason") if key in item} for item in pending]


def answer_contents(
    pending: Sequence[dict[str, Any]], answers: Sequence[dict[str, Any]], answered: Mapping[str, bool] | None = None
) -> list[Content]:
    """Core approval responses for the caller's answers (`answered`: as `check_answers`).

    Raises:
        ApprovalAnsweredError: an answer names a request an earlier turn answered.
        UnknownApprovalError: an answer names a request that is not pending.
    """
    by_id = {item["id"]: item for item in pending}
    check_answers(by_id, answers, answered)
    return [Content.from_dict(by_id[a["id"]]["request"]).to_function_approval_response(a["approved"]) for a in answers]


def check_answers(
    pending_by_id: dict[str, Any], answers: Sequence[dict[str, Any]], answered: Mapping[str, bool] | None = None
) -> None:
    """Refuse answers to requests that are not pending, or two answers to one request.

    Args:
        pending_by_id: The pending requests by id.
        answers: The caller's answers.
        answered: The requests earlier turns answered (`answered_approvals`), to say so instead of "not pending".

    Raises:
        ApprovalAnsweredError: an answer names a request an earlier turn answered.
        UnknownApprovalError: naming the answer and the pending requests.
    """
    seen: set[str] = set()
    for answer in answers:
        approval_id = answer["id"]
        if approval_id not in pending_by_id and answered and approval_id in answered:
            raise ApprovalAnsweredError(approval_id, answered[approval_id], sorted(pending_by_id))
        if approval_id not in pending_by_id or approval_id in seen:
            raise UnknownApprovalError(approval_id, sorted(pending_by_id))
        seen.add(approval_id)


def answered_approvals(messages: Sequence[dict[str, Any]]) -> dict[str, bool]:
    """The approvals the stored transcript holds answers to, by request id: approved or not.

    An answer retention evicted is no longer known; answering that request again is then "not pending".
    """
    answered: dict[str, bool] = {}
    for record in messages:
        for content in record.get("contents") or ():
            if isinstance(content, dict) and content.get("type") == APPROVAL_RESPONSE_TYPE and content.get("id"):
                answered[str(content["id"])] = bool(content.get("approved"))
    return answered


def remaining_after(
    pending: Sequence[dict[str, Any]], answers: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Pending approvals after a turn: the unanswered ones and those the turn added."""
    answered = {answer["id"] for answer in answers}
    return [item for item in pending if item["id"] not in answered] + list(new)


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments
