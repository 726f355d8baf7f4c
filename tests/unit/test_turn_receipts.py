"""Turn records: a turn's text is derived exactly as core derives it; an answer is named or copied."""

from __future__ import annotations

from agent_framework import AgentResponse, Content, Message

from agent_host._conversation.turn_receipts import completed_receipt, failed_receipt, turn_text
from agent_host._conversation.view import ConversationView
from agent_host._http.rendering import render_turn


def test_turn_text_matches_core_response_text_for_a_multi_message_answer() -> None:
    response = AgentResponse(
        messages=[
            Message("assistant", [Content.from_function_call("c1", "get_weather", arguments="{}")]),
            Message("tool", [Content.from_function_result("c1", result="sunny")]),
            Message("assistant", ["It is", Content.from_text("sunny today.")]),
            Message("assistant", ["  Anything else?  "]),
        ]
    )

    record = completed_receipt(response, 1, "assistant", [])

    assert "text" not in record  # stored once, as messages
    assert turn_text(record["messages"]) == response.text == "It is sunny today.  Anything else?  "
    turn = ConversationView({"agent": "assistant", "messages": [], "turns": {"t1": record}}).turn("t1")
    assert turn is not None and render_turn("c1", turn, "assistant")["text"] == response.text


def test_an_answer_the_transcript_holds_as_delivered_is_named_and_any_other_is_copied() -> None:
    answer = Message("assistant", ["Noted."], message_id="a1", author_name="assistant")
    held = {"id": "a1", "role": "assistant", "text": "Noted.", "at": 7}  # stored a millisecond earlier

    assert completed_receipt(AgentResponse(messages=[answer]), 8, "assistant", [held])["messages"] == ["a1"]
    edited = {**held, "text": "Noted!"}
    assert completed_receipt(AgentResponse(messages=[answer]), 8, "assistant", [edited])["messages"] == [
        {"id": "a1", "role": "assistant", "text": "Noted.", "at": 8}
    ]
    assert completed_receipt(AgentResponse(messages=[answer]), 8, "assistant", [])["messages"] == [
        {"id": "a1", "role": "assistant", "text": "Noted.", "at": 8}
    ]


def test_a_failed_record_keeps_what_the_turn_was_sent_cut_short() -> None:
    error = {"code": "turn_failed", "message": "The agent run failed (RuntimeError)."}
    answers = [{"id": "af-1", "approved": True, "reason": "ignored"}]

    long = failed_receipt(error, 5, "x" * 1001)
    short = failed_receipt(error, 5, "hello", answers)

    assert long["input"] == {"message": "x" * 999 + "\u2026"} and len(long["input"]["message"]) == 1000
    sent = {"message": "hello", "approvals": [{"id": "af-1", "approved": True}]}
    assert short == {"status": "failed", "error": error, "at": 5, "input": sent}
    assert "input" not in failed_receipt(error, 5)
