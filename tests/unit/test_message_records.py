"""The stored form of a message: the agent's own name is implied on its assistant messages, never lost."""

from __future__ import annotations

import pytest
from agent_framework import Message

from agent_host._conversation.message_reuse import _TextMessageFactory
from agent_host._http.rendering import render_message
from agent_host._records import message_to_record, record_to_message

AGENT = "assistant"


@pytest.mark.parametrize(
    ("role", "author", "stored"),
    [
        ("assistant", AGENT, {}),  # the common case: implied, not stored
        ("assistant", None, {"author": None}),  # stored as null, so it is not read back as the agent's
        ("assistant", "helper", {"author": "helper"}),
        ("user", None, {}),
        ("user", "ada", {"author": "ada"}),
        ("tool", AGENT, {"author": AGENT}),  # implied only on assistant messages
    ],
)
def test_each_author_is_stored_so_that_it_reads_back_the_same(role: str, author: str | None, stored: dict) -> None:
    message = Message(role, ["Hello."], message_id="m1", author_name=author)

    record = message_to_record(message, 5, AGENT)
    factory = _TextMessageFactory()

    assert record == {"id": "m1", "role": role, "text": "Hello.", **stored, "at": 5}
    assert record_to_message(record, AGENT).author_name == author
    built = factory.build(record, AGENT)  # the warm path's fast builder
    assert built is not None and built.author_name == author
    assert render_message(record, AGENT).get("authorName") == author


def test_a_stored_author_equal_to_another_agents_name_is_not_confused_with_this_agent() -> None:
    record = message_to_record(Message("assistant", ["Hi."], message_id="m1", author_name="other"), 1, AGENT)

    assert record["author"] == "other"
    assert record_to_message(record, AGENT).author_name == "other"
