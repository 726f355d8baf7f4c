"""Stream events: drawn from core's updates as a run streams, and from a finished answer; their SSE form."""

from __future__ import annotations

import asyncio
import json

import azure.functions as func
import pytest
from agent_framework import AgentResponseUpdate, ChatResponse, Content, Message

from agent_host import OfflineChatClient
from agent_host._errors import InvalidRequestError, TurnExpiredError
from agent_host._http.event_stream import encode_error, encode_event
from agent_host._http.requests import accepts_event_stream, last_event_id
from agent_host._streaming.channel import StreamEvent
from agent_host._streaming.events import UpdateEvents, answer_events


def update(*contents: Content, role: str = "assistant", message_id: str | None = None) -> AgentResponseUpdate:
    return AgentResponseUpdate(contents=list(contents), role=role, message_id=message_id)


def test_text_becomes_deltas_of_one_message_until_the_role_or_the_models_id_changes() -> None:
    events = UpdateEvents("t1")

    drafts = [
        *events.from_update(update(Content.from_text("Hel"))),
        *events.from_update(update(Content.from_text("lo"))),
        *events.from_update(update(Content.from_text("x"), role="tool")),
        *events.from_update(update(Content.from_text("named"), message_id="m-9")),
        *events.from_update(update(Content.from_text(" again"), message_id="m-9")),
    ]

    assert [(data["messageId"], data["role"], data["text"]) for _, data in drafts] == [
        ("t1.0", "assistant", "Hel"),
        ("t1.0", "assistant", "lo"),
        ("t1.1", "tool", "x"),
        ("m-9", "assistant", "named"),
        ("m-9", "assistant", " again"),
    ]


def test_a_tool_call_arriving_in_pieces_is_sent_whole_just_before_its_result() -> None:
    events = UpdateEvents("t1")
    first = Content.from_function_call("call-7", "get_weather", arguments='{"ci')
    rest = Content.from_function_call("call-7", "", arguments='ty": "Oslo"}')
    result = Content.from_function_result("call-7", result="rainy")

    pieces = events.from_update(update(first)) + events.from_update(update(rest))
    answered = events.from_update(update(result, role="tool"))

    assert pieces == []
    assert answered == [
        ("tool.call", {"callId": "call-7", "name": "get_weather", "arguments": {"city": "Oslo"}}),
        ("tool.result", {"callId": "call-7", "result": "rainy"}),
    ]
    assert events.finish() == []


def test_a_call_the_run_leaves_unanswered_is_sent_when_it_ends() -> None:
    events = UpdateEvents("t1")
    events.from_update(update(Content.from_function_call("c1", "cancel_order", arguments="not json")))

    assert events.finish() == [("tool.call", {"callId": "c1", "name": "cancel_order", "arguments": "not json"})]


def test_an_approval_request_names_the_id_to_answer_as_a_turns_approval_requests_do() -> None:
    events = UpdateEvents("t1")
    call = Content.from_function_call("c1", "cancel_order", arguments='{"order_id": "A17"}')
    request = Content.from_function_approval_request("approval-1", call)

    drafts = events.from_update(update(request))

    assert drafts == [
        ("tool.call", {"callId": "c1", "name": "cancel_order", "arguments": {"order_id": "A17"}}),
        ("approval.requested", {"id": "approval-1", "toolName": "cancel_order", "arguments": {"order_id": "A17"}}),
    ]


def test_a_finished_answer_gives_the_same_kinds_of_events() -> None:
    messages = [
        Message(
            "assistant",
            [Content.from_function_call("c1", "get_weather", arguments='{"city": "Oslo"}')],
            message_id="m1",
        ),
        Message("tool", [Content.from_function_result("c1", result="rainy")], message_id="m2"),
        Message("assistant", ["It is rainy."], message_id="m3"),
    ]

    drafts = answer_events(messages, [{"id": "a1", "toolName": "cancel_order", "arguments": {}}])

    assert [event for event, _ in drafts] == ["tool.call", "tool.result", "message.delta", "approval.requested"]
    assert drafts[2][1] == {"messageId": "m3", "role": "assistant", "text": "It is rainy."}


def test_an_event_is_one_sse_block_with_its_id_name_and_one_line_of_json() -> None:
    text = encode_event(StreamEvent(3, "message.delta", {"text": "two\nlines é"})).decode()

    assert text == 'id: 3\nevent: message.delta\ndata: {"text": "two\\nlines é"}\n\n'


def test_an_error_that_ends_a_stream_carries_the_json_error_body_and_status_but_no_id() -> None:
    text = encode_error(TurnExpiredError("c1", "t1")).decode()

    head, data = text.rstrip("\n").split("\n")
    assert head == "event: error"
    body = json.loads(data.removeprefix("data: "))
    assert (body["httpStatus"], body["error"]["code"], body["status"]) == (410, "turn_expired", "expired")


@pytest.mark.parametrize(
    ("accept", "streams"),
    [
        ("text/event-stream", True),
        ("application/json, text/event-stream;q=0.9", True),
        ("TEXT/EVENT-STREAM", True),
        ("text/event-stream; q=0", False),
        ("application/json", False),
        (None, False),
    ],
)
def test_an_event_stream_is_what_the_accept_header_asks_for(accept: str | None, streams: bool) -> None:
    headers = {"Accept": accept} if accept is not None else {}
    req = func.HttpRequest("POST", "http://h/api/x", headers=headers, body=b"")

    assert accepts_event_stream(req) is streams


@pytest.mark.parametrize(("value", "expected"), [(None, 0), ("", 0), ("0", 0), ("17", 17), (" 5 ", 5)])
def test_last_event_id_is_where_a_resumed_stream_starts(value: str | None, expected: int) -> None:
    headers = {"Last-Event-ID": value} if value is not None else {}

    assert last_event_id(func.HttpRequest("GET", "http://h/x", headers=headers, body=b"")) == expected


@pytest.mark.parametrize("value", ["three", "-1", "1.5", "9" * 16, "1e3"])
def test_a_last_event_id_that_is_not_an_event_id_is_refused(value: str) -> None:
    req = func.HttpRequest("GET", "http://h/x", headers={"Last-Event-ID": value}, body=b"")

    with pytest.raises(InvalidRequestError, match="Last-Event-ID header must be the id") as caught:
        last_event_id(req)

    assert caught.value.code == "invalid_last_event_id"


def test_the_offline_model_streams_word_by_word_the_reply_it_gives_whole() -> None:
    client = OfflineChatClient(word_delay_seconds=0)
    messages = [Message("user", ["My name is Ada and I like tea."])]

    async def both() -> tuple[ChatResponse, list[str], ChatResponse]:
        whole = await client.get_response(messages)
        stream = client.get_response(messages, stream=True)
        pieces = [update.text async for update in stream if update.text]
        return whole, pieces, await stream.get_final_response()

    whole, pieces, final = asyncio.run(both())

    assert len(pieces) > 5
    assert "".join(pieces) == whole.text == final.text
    assert pieces[0] == "[offline "


def test_the_offline_model_refuses_a_negative_pace() -> None:
    with pytest.raises(ValueError, match="word_delay_seconds must be 0 or more, got -1"):
        OfflineChatClient(word_delay_seconds=-1)
