"""Message reuse: a run gets the messages built before for records still stored, and only unchanged ones map back."""

from __future__ import annotations

from typing import Any

from agent_host._conversation.message_reuse import StoredMessages, _TextMessageFactory
from agent_host._records import record_to_message


def records(*texts: str) -> list[dict[str, Any]]:
    return [
        {"id": f"m{n}", "role": "user" if n % 2 == 0 else "assistant", "text": text, "at": n}
        for n, text in enumerate(texts)
    ]


def test_an_unchanged_message_maps_back_to_its_record_and_an_edited_one_does_not() -> None:
    stored = records("hi", "hello", "bye")
    history = StoredMessages().history_for(stored, "assistant")
    kept, annotated, renamed = history.messages

    annotated.additional_properties["_excluded"] = True
    renamed.message_id = "other"

    assert history.record_for(kept) is stored[0]
    assert history.record_for(annotated) is None
    assert history.record_for(renamed) is None


def test_a_grown_transcript_reuses_every_message_the_last_run_left_unchanged() -> None:
    stored = records("hi", "hello")
    messages = StoredMessages()
    first = messages.history_for(stored, "assistant")
    assert all(first.record_for(message) for message in first.messages)
    grown = [*stored, *records("a", "b", "more")[2:]]

    second = messages.carried_to(grown).history_for(grown, "assistant")

    assert second.messages[:2] == first.messages and all(
        a is b for a, b in zip(second.messages, first.messages, strict=False)
    )
    assert second.messages[2].text == "more"


def test_messages_a_run_never_confirmed_are_not_carried_to_the_next_state() -> None:
    stored = records("hi", "hello")
    messages = StoredMessages()
    first = messages.history_for(stored, "assistant")
    first.messages[1].additional_properties["_excluded"] = True  # changed in place; the run then failed

    second = messages.carried_to(stored).history_for(stored, "assistant")

    assert all(again is not before for again, before in zip(second.messages, first.messages, strict=True))
    assert second.messages[1].additional_properties == {}


def test_plain_text_records_are_built_exactly_as_record_to_message_builds_them() -> None:
    factory = _TextMessageFactory()
    plain = {"id": "t1.0", "role": "assistant", "text": "Noted.", "author": "helper", "at": 5}
    annotated = {**plain, "props": {"_group": {"id": "g1"}}}

    built = factory.build(plain, "assistant")

    assert built is not None
    assert built.to_dict() == record_to_message(plain, "assistant").to_dict()
    again = factory.build(plain, "assistant")
    assert again is not None and built.contents[0].additional_properties is not again.contents[0].additional_properties
    assert factory.build(annotated, "assistant") is None
