"""Tool approvals across turns: pending requests from a core response, answers checked, core responses rebuilt."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agent_framework import AgentResponse, Content, Message, tool
from apps import make_agent
from chat_clients import ScriptedChatClient

from agent_host._conversation.approvals import (
    answer_contents,
    answered_approvals,
    check_answers,
    pending_from_response,
    public_view,
    remaining_after,
)
from agent_host._errors import ApprovalAnsweredError, UnknownApprovalError


def approval_request(request_id: str, tool_name: str, arguments: Any, call_id: str | None = None) -> Content:
    """Core's approval request for a call, as its function invocation layer makes it (id = the call's id)."""
    call = Content.from_function_call(call_id or f"call-{request_id}", tool_name, arguments=arguments, id=request_id)
    return Content.from_function_approval_request(id=request_id, function_call=call)


def response_with(*contents: Content | str) -> AgentResponse:
    return AgentResponse(messages=[Message("assistant", list(contents))])


def cold(pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pending approvals as a later operation reads them back from stored JSON."""
    return json.loads(json.dumps(pending))


def pending_item(request_id: str) -> dict[str, Any]:
    return {"id": request_id, "toolName": "refund", "arguments": {}, "request": {}}


# --- pending_from_response -----------------------------------------------------------------------------------------


def test_a_response_approval_request_is_stored_with_tool_arguments_and_the_core_request() -> None:
    request = approval_request("fc_1", "refund", '{"order_id": "A17"}', call_id="call-1")

    pending = pending_from_response(response_with("Checking with you first.", request))

    assert pending == [
        {"id": "fc_1", "toolName": "refund", "arguments": {"order_id": "A17"}, "request": request.to_dict()}
    ]
    assert pending[0]["request"]["type"] == "function_approval_request"
    assert pending[0]["request"]["function_call"]["call_id"] == "call-1"


def test_mapping_arguments_are_kept_and_text_that_is_not_json_stays_text() -> None:
    response = response_with(
        approval_request("fc_1", "refund", {"order_id": "A17"}),
        approval_request("fc_2", "lookup", "order A17, please"),
    )

    pending = pending_from_response(response)

    assert [(item["toolName"], item["arguments"]) for item in pending] == [
        ("refund", {"order_id": "A17"}),
        ("lookup", "order A17, please"),
    ]


def test_requests_across_messages_are_kept_in_order_and_other_input_requests_skipped() -> None:
    response = AgentResponse(
        messages=[
            Message("assistant", [approval_request("fc_1", "refund", "{}")]),
            Message("assistant", [Content.from_oauth_consent_request("https://login.example/consent")]),
            Message("assistant", ["Plain text asks for nothing.", approval_request("fc_2", "cancel", "{}")]),
        ]
    )

    assert [item["id"] for item in pending_from_response(response)] == ["fc_1", "fc_2"]


def test_a_response_without_requests_leaves_nothing_pending() -> None:
    assert pending_from_response(response_with("Done.")) == []


def test_a_caller_sees_id_tool_and_arguments_only() -> None:
    pending = pending_from_response(response_with(approval_request("fc_1", "refund", '{"order_id": "A17"}')))

    assert public_view(pending) == [{"id": "fc_1", "toolName": "refund", "arguments": {"order_id": "A17"}}]


# --- check_answers -------------------------------------------------------------------------------------------------


def test_answers_to_pending_requests_pass() -> None:
    pending = {"fc_1": pending_item("fc_1"), "fc_2": pending_item("fc_2")}

    check_answers(pending, [{"id": "fc_2", "approved": False}, {"id": "fc_1", "approved": True}])
    check_answers(pending, [])


def test_an_answer_to_an_unknown_request_is_unknown_approval_listing_the_pending_ids() -> None:
    pending = {"fc_2": pending_item("fc_2"), "fc_1": pending_item("fc_1")}

    with pytest.raises(UnknownApprovalError) as caught:
        check_answers(pending, [{"id": "fc_1", "approved": True}, {"id": "fc_9", "approved": True}])

    assert (caught.value.code, caught.value.status) == ("unknown_approval", 400)
    assert caught.value.message == (
        "Approval 'fc_9' is not pending in this conversation (pending: fc_1, fc_2). "
        "Answer each request from the last turn's approvalRequests once."
    )


def test_two_answers_to_one_request_are_unknown_approval() -> None:
    pending = {"fc_1": pending_item("fc_1")}

    with pytest.raises(UnknownApprovalError, match=r"Approval 'fc_1' is not pending .*\(pending: fc_1\)"):
        check_answers(pending, [{"id": "fc_1", "approved": True}, {"id": "fc_1", "approved": False}])


def test_an_answer_when_nothing_is_pending_says_none_is() -> None:
    with pytest.raises(UnknownApprovalError, match=r"\(pending: none\)"):
        check_answers({}, [{"id": "fc_1", "approved": True}])


def test_an_answer_to_a_request_an_earlier_turn_answered_says_so_with_its_verdict() -> None:
    request = approval_request("fc_1", "refund", "{}")
    transcript = cold(
        [
            {"id": "m1", "role": "assistant", "contents": [request.to_dict()]},
            {"id": "m2", "role": "user", "contents": [request.to_function_approval_response(False).to_dict()]},
        ]
    )

    answered = answered_approvals(transcript)
    with pytest.raises(ApprovalAnsweredError) as caught:
        answer_contents([], [{"id": "fc_1", "approved": True}], answered)

    assert answered == {"fc_1": False}
    assert (caught.value.code, caught.value.status) == ("approval_already_answered", 409)
    assert "already answered (rejected)" in caught.value.message
    with pytest.raises(UnknownApprovalError):  # an id no turn answered is still "not pending"
        check_answers({}, [{"id": "fc_2", "approved": True}], answered)


# --- answer_contents -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approved", [True, False])
def test_an_answer_becomes_core_approval_response_after_a_cold_start(approved: bool) -> None:
    request = approval_request("fc_1", "refund", '{"order_id": "A17"}', call_id="call-1")
    stored = cold(pending_from_response(response_with(request)))

    (content,) = answer_contents(stored, [{"id": "fc_1", "approved": approved}])

    assert content.type == "function_approval_response"
    assert (content.id, content.approved) == ("fc_1", approved)
    assert (content.function_call.call_id, content.function_call.name) == ("call-1", "refund")
    assert content.function_call.arguments == '{"order_id": "A17"}'
    assert content.to_dict() == request.to_function_approval_response(approved).to_dict()


def test_answers_come_back_in_the_order_given() -> None:
    stored = cold(
        pending_from_response(
            response_with(approval_request("fc_1", "refund", "{}"), approval_request("fc_2", "cancel", "{}"))
        )
    )

    contents = answer_contents(stored, [{"id": "fc_2", "approved": False}, {"id": "fc_1", "approved": True}])

    assert [(c.id, c.function_call.name, c.approved) for c in contents] == [
        ("fc_2", "cancel", False),
        ("fc_1", "refund", True),
    ]


def test_answer_contents_refuses_an_answer_to_no_pending_request() -> None:
    stored = cold(pending_from_response(response_with(approval_request("fc_1", "refund", "{}"))))

    with pytest.raises(UnknownApprovalError, match="Approval 'fc_7' is not pending"):
        answer_contents(stored, [{"id": "fc_7", "approved": True}])


refunds: list[str] = []


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    refunds.append(order_id)
    return f"Refunded {order_id}."


def test_a_stored_request_answered_after_a_cold_start_runs_the_tool_in_core() -> None:
    # Through a real agent: the request core's function layer makes, stored as JSON, answered in the next run.
    refunds.clear()
    agent = make_agent(ScriptedChatClient(), tools=[refund])
    session = agent.create_session(session_id="c1")

    async def two_turns() -> tuple[list[dict[str, Any]], str]:
        asked = await agent.run('call refund {"order_id": "A17"}', session=session)
        stored = cold(pending_from_response(asked))
        answers = answer_contents(stored, [{"id": stored[0]["id"], "approved": True}])
        answered = await agent.run(Message("user", answers), session=session)
        return stored, answered.text

    stored, text = asyncio.run(two_turns())

    assert public_view(stored) == [{"id": stored[0]["id"], "toolName": "refund", "arguments": {"order_id": "A17"}}]
    assert refunds == ["A17"]
    assert text == "tool said Refunded A17."


# --- remaining_after -----------------------------------------------------------------------------------------------


def test_remaining_after_keeps_the_unanswered_in_order_then_the_new() -> None:
    pending = [pending_item("fc_1"), pending_item("fc_2"), pending_item("fc_3")]
    new = [pending_item("fc_4")]

    remaining = remaining_after(pending, [{"id": "fc_2", "approved": True}], new)

    assert [item["id"] for item in remaining] == ["fc_1", "fc_3", "fc_4"]


def test_remaining_after_every_answer_is_only_the_new() -> None:
    pending = [pending_item("fc_1")]

    assert remaining_after(pending, [{"id": "fc_1", "approved": False}], []) == []
    assert remaining_after([], [], [pending_item("fc_2")]) == [pending_item("fc_2")]
