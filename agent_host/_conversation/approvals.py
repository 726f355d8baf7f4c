"""Tool approvals across turns: the requests a turn leaves pending, and the answers the next turn brings.

A pending request is kept in the conversation state with the core content it came from, so the answer can be
turned back into core's `function_approval_response` after any cold start. Knows nothing about HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_framework import AgentResponse, Content

from .._errors import UnknownApprovalError


def pending_from_response(response: AgentResponse) -> list[dict[str, Any]]:
    """The approval requests a run ended with, in their stored form."""
    pending = []
    for request in response.user_input_requests:
        if request.type != "function_approval_request" or request.function_call is None:
            continue
        call = request.function_call
        pending.append(
            {
                "id": request.id,
                "toolName": call.name,
                "arguments": _arguments(call.arguments),
                "request": request.to_dict(),
            }
        )
    return pending


def public_view(pending: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a caller sees of pending approvals: id, tool name and arguments."""
    return [{"id": item["id"], "toolName": item["toolName"], "arguments": item["arguments"]} for item in pending]


def answer_contents(pending: Sequence[dict[str, Any]], answers: Sequence[dict[str, Any]]) -> list[Content]:
    """Core approval responses for the caller's answers.

    Raises:
        UnknownApprovalError: an answer names a request that is not pending.
    """
    by_id = {item["id"]: item for item in pending}
    check_answers(by_id, answers)
    return [Content.from_dict(by_id[a["id"]]["request"]).to_function_approval_response(a["approved"]) for a in answers]


def check_answers(pending_by_id: dict[str, Any], answers: Sequence[dict[str, Any]]) -> None:
    """Refuse answers to requests that are not pending, or two answers to one request.

    Raises:
        UnknownApprovalError: naming the answer and the pending requests.
    """
    seen: set[str] = set()
    for answer in answers:
        if answer["id"] not in pending_by_id or answer["id"] in seen:
            raise UnknownApprovalError(answer["id"], sorted(pending_by_id))
        seen.add(answer["id"])


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
