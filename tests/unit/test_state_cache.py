"""The state cache: reusing decoded state, messages and JSON never changes what is stored or what a run sees."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_framework import CompactionProvider, InMemoryHistoryProvider, SlidingWindowStrategy
from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient
from clocks import ManualClock

from agent_host import HostSettings, RetentionSettings, StateCorruptError
from agent_host._conversation.state import encode_state, new_state
from agent_host._conversation.state_cache import CONVERSATION_CACHE, ConversationCache, estimated_bytes
from bench.state_cache_memory import SHAPES, measure_shape

ROOT = Path(__file__).resolve().parents[2]

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


def conversation_text(key: str, messages: int, chars_each: int) -> str:
    state = new_state("assistant", key, RetentionSettings(), 1)
    state["messages"] = [
        {"id": f"{key}.{n}", "role": "user" if n % 2 == 0 else "assistant", "text": "x" * chars_each, "at": n}
        for n in range(messages)
    ]
    return encode_state(state)


def test_the_cache_is_bounded_by_the_memory_it_holds_not_by_how_many_conversations() -> None:
    # 200 small conversations fit where a few large ones fill the same bound: a count of conversations (or of
    # characters alone) would keep too few of the first or too many of the second.
    small = [conversation_text(f"s{n}", 4, 40) for n in range(200)]
    large = [conversation_text(f"l{n}", 2_000, 200) for n in range(20)]
    bound = sum(estimated_bytes(text, json.loads(text)) for text in large[-4:])  # room for four large ones
    cache = ConversationCache(max_bytes=bound)

    for number, text in enumerate(small):
        cache.decode("assistant", f"s{number}", text)
    kept_small = len(cache)
    for number, text in enumerate(large):
        cache.decode("assistant", f"l{number}", text)

    assert kept_small == 200
    assert len(cache) == 4
    assert cache.held_bytes == bound


def test_a_conversation_larger_than_the_whole_bound_is_not_kept_and_zero_keeps_nothing() -> None:
    text = conversation_text("c1", 100, 100)
    cache = ConversationCache(max_bytes=estimated_bytes(text, json.loads(text)) - 1)
    cache.decode("assistant", "c1", text)
    off = ConversationCache(max_bytes=0)
    off.decode("assistant", "c1", conversation_text("c1", 1, 1))

    assert (len(cache), cache.held_bytes) == (0, 0)
    assert (len(off), off.held_bytes) == (0, 0)


def test_the_estimate_is_what_a_cached_conversation_holds_after_its_turns() -> None:
    # Measured with tracemalloc, as `python -m bench.state_cache_memory` does at 600 kB, for the cheapest and the
    # most expensive kind of history per byte (short plain messages; tool calls, compacted).
    short, _, _, compacted = SHAPES
    for name, agent, message in (short, compacted):
        figures = measure_shape(name, agent, message, 40_000)

        assert 0.8 <= figures["estimated_over_measured"] <= 1.25, figures


def test_the_bound_is_a_setting_that_the_app_applies() -> None:
    assert HostSettings.from_environment({"AGENT_HOST_STATE_CACHE_MB": "0"}).state_cache_mb == 0
    assert HostSettings.from_environment({}).state_cache_mb == 128
    with pytest.raises(ValueError, match="AGENT_HOST_STATE_CACHE_MB"):
        HostSettings.from_environment({"AGENT_HOST_STATE_CACHE_MB": "-5"})
    try:
        build_app(compacting_agent(), settings=HostSettings(state_cache_mb=3))
        assert CONVERSATION_CACHE.max_bytes == 3 * 1024 * 1024
    finally:
        build_app(compacting_agent())
    assert CONVERSATION_CACHE.max_bytes == 128 * 1024 * 1024


def test_a_worker_touching_more_conversations_than_fit_keeps_its_memory_near_the_bound() -> None:
    # 30 conversations of 300 kB hold about 150 MB decoded: a 24 MB bound keeps the worker's growth near it. Measured
    # in a fresh process (RSS never shrinks back), as the benchmark measures each bound.
    completed = subprocess.run(
        [sys.executable, "-m", "bench.state_cache_memory", "--worker", "24", "--plan", "[300000, 30, 1, [24]]"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=300,
    )
    worker = json.loads(completed.stdout)
    (round_figures,) = worker["rounds"]

    assert round_figures["estimated_mb"] <= 24
    assert 2 <= round_figures["cached"] <= 6
    assert round_figures["peak_rss_mb"] - worker["rss_before_mb"] < 70, worker
