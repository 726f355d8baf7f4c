"""Tool approvals across turns: the requests a turn leaves pending, and the answers the next turn brings.

A pending request is kept in the conversation state with the core content it came from, so the answer can be
turned back into core's `function_approval_response` after any cold start. A request may have a lifetime
(`expiresAt`): once it has passed, the next turn declines it as the caller would, and the declined response in the
transcript says why (`declinedBecause`). Knows nothing about HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import AgentResponse, Content

from .._errors import ApprovalAnsweredError, ApprovalExpiredError, UnknownApprovalError
from .state import EXPIRES_AT_KEY

APPROVAL_RESPONSE_TYPE = "function_approval_response"
# The annotation on a declined response the host wrote for an expired request, in the content's additional_properties
# (kept in the transcript with the content, and shown by GET .../messages).
DECLINED_BECAUSE_KEY = "declinedBecause"
EXPIRED = "expired"


def pending_from_response(response: AgentResponse, expires_at: int | None = None) -> list[dict[str, Any]]:
    """The approval requests a run ended with, in their stored form; `expires_at` is their lifetime's end, if any."""
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
                **({EXPIRES_AT_KEY: expires_at} if expires_at is not None else {}),
                # Why the host asks, when it asks on its own (a tool a re-run turn cannot tell has run).
                **({"reason": reason} if isinstance(reason, str) else {}),
            }
        )
    return pending


def public_view(pending: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a caller sees of pending approvals: id, tool name and arguments, when it expires if it does, and why
    when the host says."""
    return [
        {
            "id": item["id"],
            "toolName": item["toolName"],
            "arguments": item["arguments"],
            **({EXPIRES_AT_KEY: item[EXPIRES_AT_KEY]} if item.get(EXPIRES_AT_KEY) is not None else {}),
            **({"reason": item["reason"]} if "reason" in item else {}),
        }
        for item in pending
    ]


def lapsed_approvals(pending: Sequence[dict[str, Any]], now_ms: int) -> list[dict[str, Any]]:
    """The pending requests whose lifetime has passed at `now_ms`."""
    return [item for item in pending if item.get(EXPIRES_AT_KEY) is not None and item[EXPIRES_AT_KEY] <= now_ms]


def expiry_declines(lapsed: Sequence[dict[str, Any]]) -> list[Content]:
    """Core approval responses declining each lapsed request, annotated with why and since when."""
    declines = []
    for item in lapsed:
        decline = Content.from_dict(item["request"]).to_function_approval_response(False)
        decline.additional_properties = {
            **(decline.additional_properties or {}),
            DECLINED_BECAUSE_KEY: EXPIRED,
            EXPIRES_AT_KEY: item[EXPIRES_AT_KEY],
        }
        declines.append(decline)
    return declines


def answer_contents(
    pending: Sequence[dict[str, Any]],
    answers: Sequence[dict[str, Any]],
    answered: Mapping[str, bool] | None = None,
    expired: Mapping[str, int] | None = None,
) -> list[Content]:
    """Core approval responses for the caller's answers (`answered`, `expired`: as `check_answers`).

    Raises:
        ApprovalExpiredError: an answer names a request whose lifetime has passed.
        ApprovalAnsweredError: an answer names a request an earlier turn answered.
        UnknownApprovalError: an answer names a request that is not pending.
    """
    by_id = {item["id"]: item for item in pending}
    check_answers(by_id, answers, answered, expired)
    return [Content.from_dict(by_id[a["id"]]["request"]).to_function_approval_response(a["approved"]) for a in answers]


def check_answers(
    pending_by_id: dict[str, Any],
    answers: Sequence[dict[str, Any]],
    answered: Mapping[str, bool] | None = None,
    expired: Mapping[str, int] | None = None,
) -> None:
    """Refuse answers to requests that are not pending or have expired, or two answers to one request.

    Args:
        pending_by_id: The pending requests by id.
        answers: The caller's answers.
        answered: The requests earlier turns answered (`answered_approvals`), to say so instead of "not pending".
        expired: When each expired request expired (`expired_approvals`): lapsed pending ones and those declined.

    Raises:
        ApprovalExpiredError: an answer names an expired request (checked first: its decline is the host's).
        ApprovalAnsweredError: an answer names a request an earlier turn answered.
        UnknownApprovalError: naming the answer and the pending requests.
    """
    seen: set[str] = set()
    for answer in answers:
        approval_id = answer["id"]
        if expired and approval_id in expired:
            raise ApprovalExpiredError(approval_id, expired[approval_id])
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


def expired_approvals(
    pending: Sequence[dict[str, Any]], messages: Sequence[dict[str, Any]], now_ms: int
) -> dict[str, int]:
    """When each expired request expired, by id: pending ones past their lifetime at `now_ms`, and those a turn
    already declined for it (the transcript's annotated declines)."""
    expired: dict[str, int] = {}
    for record in messages:
        for content in record.get("contents") or ():
            if isinstance(content, dict) and content.get("type") == APPROVAL_RESPONSE_TYPE and content.get("id"):
                annotation = content.get("additional_properties") or {}
                if annotation.get(DECLINED_BECAUSE_KEY) == EXPIRED:
                    expired[str(content["id"])] = int(annotation.get(EXPIRES_AT_KEY, 0))
    expired.update((item["id"], item[EXPIRES_AT_KEY]) for item in lapsed_approvals(pending, now_ms))
    return expired


def remaining_after(
    pending: Sequence[dict[str, Any]], answers: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Pending approvals after a turn: the unanswered ones and those the turn added (`answers`: anything with the
    `id` of a request the turn answered or declined)."""
    answered = {answer["id"] for answer in answers}
    return [item for item in pending if item["id"] not in answered] + list(new)


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments
