"""The state cache: reusing decoded state, messages and JSON never changes what is stored or what a run sees."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agent_framework import CompactionProvider, InMemoryHistoryProvider, SlidingWindowStrategy
from clocks import ManualClock
from conftest import ScriptedChatClient, build_app, driver_for, make_agent
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_host import HostSettings, RetentionSettings, StateCorruptError
from agent_host._conversation.state import encode_state, new_state
from agent_host._conversation.state_cache import CONVERSATION_CACHE, ConversationCache, _TextMessageFactory
from agent_host._records import record_to_message

# Core gives each function-call content a random `af-call-...` id; everything else here is deterministic.
_CALL_CONTENT_ID = re.compile(r"af-call-[0-9a-f]+")

TURNS = [
    "My name is Ada.",
    'call get_weather {"city": "Paris"}',
    "I live in Lyon.",
    "What is my name?",
    'call get_weather {"city": "Oslo"}',
    "Thanks, that is all.",
    "One more: what city do I live in?",
]


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def compacting_agent() -> Any:
    history = InMemoryHistoryProvider()
    compaction = CompactionProvider(
        after_strategy=SlidingWindowStrategy(keep_last_groups=2), history_source_id=history.source_id
    )
    return make_agent(ScriptedChatClient(), tools=[get_weather], context_providers=[history, compaction])


def run_conversation(*, cold_every_turn: bool, settings: HostSettings | None = None, turns: int = 1) -> list[str]:
    CONVERSATION_CACHE.clear()
    clock = ManualClock(step_ms=7)
    driver = driver_for(build_app(compacting_agent(), settings=settings, clock=clock), "assistant")
    written = []
    for number, text in enumerate(TURNS * turns, start=1):
        if cold_every_turn:
            CONVERSATION_CACHE.clear()
        assert driver.run_turn(f"t{number}", text)["status"] == "completed"
        assert driver.state is not None
        written.append(_CALL_CONTENT_ID.sub("af-call-<id>", driver.state))
    return written


def test_a_warm_process_stores_exactly_what_a_cold_process_stores() -> None:
    # Compaction edits stored messages in place every turn and tools add call/result messages: each change must
    # reach the stored state whether or not the process reuses what it decoded.
    cold = run_conversation(cold_every_turn=True)
    warm = run_conversation(cold_every_turn=False)

    assert warm == cold
    excluded = [m for m in json.loads(warm[-1])["messages"] if (m.get("props") or {}).get("_excluded")]
    assert excluded, "the sliding window never excluded anything: the comparison proved nothing"


def test_a_warm_process_evicts_exactly_what_a_cold_process_evicts() -> None:
    # Eviction drops the oldest records: the transcript no longer just grows, so nothing cached may be assumed.
    small = HostSettings(retention=RetentionSettings(mode="auto", max_state_bytes=9000), max_turn_records=3)

    cold = run_conversation(cold_every_turn=True, settings=small, turns=3)
    warm = run_conversation(cold_every_turn=False, settings=small, turns=3)

    assert warm == cold
    assert json.loads(warm[-1])["truncation"]["evictedMessages"] > 0


def records(*texts: str) -> list[dict[str, Any]]:
    return [
        {"id": f"m{n}", "role": "user" if n % 2 == 0 else "assistant", "text": text, "at": n}
        for n, text in enumerate(texts)
    ]


def cached_state(cache: ConversationCache, messages: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["messages"] = messages
    text = encode_state(state)
    return cache.decode("assistant", "c1", text), text


def test_an_unchanged_message_maps_back_to_its_record_and_an_edited_one_does_not() -> None:
    cache = ConversationCache()
    state, _ = cached_state(cache, records("hi", "hello", "bye"))
    history = cache.history_for(state["messages"], "assistant")
    kept, annotated, renamed = history.messages

    annotated.additional_properties["_excluded"] = True
    renamed.message_id = "other"

    assert history.record_for(kept) is state["messages"][0]
    assert history.record_for(annotated) is None
    assert history.record_for(renamed) is None


def test_messages_a_failed_run_may_have_changed_are_rebuilt_for_the_next_run() -> None:
    # A run that fails never reports which messages it left unchanged, so none of them is trusted again.
    cache = ConversationCache()
    state, text = cached_state(cache, records("hi", "hello"))
    first = cache.history_for(state["messages"], "assistant")
    first.messages[1].additional_properties["_excluded"] = True  # changed in place, then the run failed

    cache.remember("assistant", "c1", state, text)
    second = cache.history_for(cache.decode("assistant", "c1", text)["messages"], "assistant")

    assert all(again is not before for again, before in zip(second.messages, first.messages, strict=True))
    assert second.messages[1].additional_properties == {}


def test_a_transcript_that_changed_other_than_by_growing_gets_the_messages_of_its_own_records() -> None:
    cache = ConversationCache()
    state, _ = cached_state(cache, records("first", "second", "third"))
    last_run = cache.history_for(state["messages"], "assistant")
    assert all(last_run.record_for(message) for message in last_run.messages)
    summary = {"id": "s1", "role": "assistant", "text": "summary of first", "at": 0}
    rewritten = {**state, "messages": [summary, *state["messages"][1:], *records("a", "b", "c", "fourth")[3:]]}

    cache.remember("assistant", "c1", rewritten, encode_state(rewritten))
    next_run = cache.history_for(rewritten["messages"], "assistant")

    assert [m.text for m in next_run.messages] == ["summary of first", "second", "third", "fourth"]
    assert next_run.messages[1] is last_run.messages[1]  # unchanged records keep their messages


def test_a_string_this_process_did_not_write_is_decoded_and_validated() -> None:
    cache = ConversationCache()
    cached_state(cache, records("hi"))

    with pytest.raises(StateCorruptError):
        cache.decode("assistant", "c1", '{"schemaVersion": 2, "messages": [{"id": "x"}]}')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=8,
)
stored_records = st.fixed_dictionaries(
    {"id": st.text(min_size=1), "role": st.sampled_from(["user", "assistant", "tool"]), "at": st.integers()},
    optional={"text": st.text(), "props": st.dictionaries(st.text(), json_values, max_size=3)},
)


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(stored_records, max_size=4),
    added=st.lists(stored_records, max_size=3),
    turns=st.dictionaries(st.text(), st.dictionaries(st.text(), json_values, max_size=3), max_size=3),
    extra=st.dictionaries(st.text(min_size=1).filter(lambda k: k not in {"messages", "turns"}), json_values),
)
def test_encoding_from_cached_fragments_is_byte_for_byte_encode_state(
    first: list[dict[str, Any]], added: list[dict[str, Any]], turns: dict[str, Any], extra: dict[str, Any]
) -> None:
    cache = ConversationCache()
    state = {"schemaVersion": 1, "messages": first, "turns": turns, **extra}
    grown = {**state, "messages": [*first, *added], "turns": {**turns, "new": {"status": "completed"}}}

    assert cache.encode("a", "c", state) == encode_state(state)
    cache.remember("a", "c", state, encode_state(state))
    assert cache.encode("a", "c", grown) == encode_state(grown)  # reuses the first encoding's fragments
    assert cache.encode("a", "c", state) == encode_state(state)  # a list that is not an extension of the last


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


def test_messages_lent_to_a_run_that_raised_before_committing_are_rebuilt() -> None:
    # The operation raised after the run (nothing remembered), and the host hands back the same string.
    cache = ConversationCache()
    state, text = cached_state(cache, records("hi", "hello"))
    first = cache.history_for(state["messages"], "assistant")
    first.messages[0].additional_properties["_excluded"] = True

    second = cache.history_for(cache.decode("assistant", "c1", text)["messages"], "assistant")

    assert second.messages[0] is not first.messages[0]
    assert second.messages[0].additional_properties == {}
