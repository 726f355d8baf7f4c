"""Which messages of an AG-UI run are new: matched by id against the stored transcript, else by role and text."""

from __future__ import annotations

from agent_host._http.agui_route import AguiMessage, new_messages

STORED = [
    {"id": "t1.in", "role": "user", "text": "My name is Ada."},
    {"id": "msg_1", "role": "assistant", "contents": [{"type": "text", "text": "Noted."}]},
]


def sent(*messages: tuple[str | None, str, str]) -> list[AguiMessage]:
    return [AguiMessage(id=id_, role=role, content=text) for id_, role, text in messages]


def test_messages_after_the_last_stored_id_are_new() -> None:
    messages = sent(("u-random", "user", "My name is Ada."), ("msg_1", "assistant", "Noted."), ("u2", "user", "Hi"))

    assert [m.id for m in new_messages(messages, STORED)] == ["u2"]


def test_without_a_known_id_messages_after_the_last_one_stored_by_role_and_text_are_new() -> None:
    messages = sent(("a", "user", "My name is Ada."), ("b", "assistant", "Noted."), ("c", "user", "What is my name?"))

    assert [m.id for m in new_messages(messages, STORED)] == ["c"]


def test_every_message_is_new_when_none_is_stored() -> None:
    messages = sent(("a", "user", "Hello"), ("b", "user", "Again"))

    assert [m.id for m in new_messages(messages, STORED)] == ["a", "b"]
    assert [m.id for m in new_messages(messages, [])] == ["a", "b"]


def test_a_repeated_text_sent_alone_is_new_though_an_older_message_says_it_too() -> None:
    stored = [
        *STORED,
        {"id": "t2.in", "role": "user", "text": "yes"},
        {"id": "msg_3", "role": "assistant", "text": "Ok."},
    ]

    assert [m.id for m in new_messages(sent(("x", "user", "yes")), stored)] == ["x"]


def test_a_message_carrying_a_stored_tool_call_is_held() -> None:
    stored = [*STORED, {"id": "msg_2", "role": "assistant", "contents": [{"type": "function_call", "call_id": "k1"}]}]
    called = AguiMessage(
        id="front-1", role="assistant", content="Refunding.", tool_calls=[{"id": "k1", "type": "function"}]
    )
    answer = AguiMessage(id="a1", role="tool", content='{"approved": true}', tool_call_id="k1")

    assert new_messages([*sent(("u", "user", "again")), called, answer], stored) == [answer]
