"""The state cache: reusing decoded state, messages and JSON never changes what is stored or what a run sees."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agent_framework import CompactionProvider, InMemoryHistoryProvider, SlidingWindowStrategy
from clocks import ManualClock
from conftest import ScriptedChatClient, build_app, driver_for, make_agent

from agent_host import HostSettings, RetentionSettings, StateCorruptError
from agent_host._conversation.state import encode_state, new_state
from agent_host._conversation.state_cache import CONVERSATION_CACHE, ConversationCache

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


def test_messages_lent_to_a_run_that_raised_before_committing_are_rebuilt() -> None:
    # The operation raised after the run (nothing remembered), and the host hands back the same string.
    cache = ConversationCache()
    state, text = cached_state(cache, records("hi", "hello"))
    first = cache.history_for(state["messages"], "assistant")
    first.messages[0].additional_properties["_excluded"] = True

    second = cache.history_for(cache.decode("assistant", "c1", text)["messages"], "assistant")

    assert second.messages[0] is not first.messages[0]
    assert second.messages[0].additional_properties == {}


def test_a_cold_process_writes_the_transcript_back_as_it_read_it() -> None:
    # Written by another process in another spelling (escaped non-ASCII): re-encoding it would write "café".
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["messages"] = records("caf\u00e9", "Bonjour")
    stored = json.dumps(state, ensure_ascii=True)
    cache = ConversationCache()
    decoded = cache.decode("assistant", "c1", stored)
    grown = {**decoded, "messages": [*decoded["messages"], *records("a", "b", "Merci")[2:]]}

    text = cache.encode("assistant", "c1", grown)

    assert json.dumps(decoded["messages"], ensure_ascii=True)[1:-1] in text
    assert json.loads(text) == grown
