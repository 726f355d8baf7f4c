"""Regression tests for the silent-loss failure modes 1-5 of the design brief, one or two per mode.

Each drives the conversation entity with the host's JSON batches and a cold start before every turn (new objects,
nothing decoded kept), or calls the history codec directly where the rule is about it alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_framework import (
    Agent,
    CompactionProvider,
    InMemoryHistoryProvider,
    Message,
    SlidingWindowStrategy,
    SummarizationStrategy,
    ToolResultCompactionStrategy,
)
from apps import build_app, driver_for
from batches import delivered
from parity_fakes import TOOL_RESULTS_PREFIX, CallLog, RecordingChatClient, get_time, get_weather

from agent_host import HostSettings, RetentionSettings
from agent_host._conversation.history import reconcile_by_message_id
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._records import message_to_record, record_to_message

BuildAgent = Callable[[CallLog], Agent]
AGENT = "assistant"


def converse(
    build: BuildAgent, turns: list[str], *, log: CallLog | None = None, settings: HostSettings | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run `turns` through the entity, cold before each; return the final state and each turn's record."""
    log = log or CallLog()
    stored: str | None = None
    records = []
    for number, text in enumerate(turns):
        CONVERSATION_CACHE.clear()
        driver = driver_for(build_app(build(log), settings=settings), "assistant", state=stored)
        record = driver.run_turn(f"t{number}", text)
        assert record["status"] == "completed", record
        records.append(record)
        stored = driver.state
    assert stored is not None
    return json.loads(stored), records


def compacting_agent(after: Callable[[CallLog], Any]) -> BuildAgent:
    def build(log: CallLog) -> Agent:
        history = InMemoryHistoryProvider(skip_excluded=True)
        compaction = CompactionProvider(after_strategy=after(log), history_source_id=history.source_id)
        return Agent(
            RecordingChatClient(log),
            "Be brief.",
            name="assistant",
            tools=[get_weather, get_time],
            context_providers=[history, compaction],
        )

    return build


TOOL_TURNS = [
    "My name is Ada.",
    "call get_weather city=Paris",
    "I live in Lyon.",
    "call get_time city=Tokyo",
    "call get_weather city=Oslo",
    "What is my name?",
]


def tool_result_compaction(log: CallLog) -> ToolResultCompactionStrategy:
    return ToolResultCompactionStrategy(keep_last_tool_call_groups=1)


def props(record: dict[str, Any]) -> dict[str, Any]:
    return record.get("props") or {}


def group(record: dict[str, Any]) -> dict[str, Any]:
    return props(record).get("_group") or {}


# Failure 1: ids derived from object identity (or re-derived on load) change across cold starts.


def test_failure_1_ids_are_stored_once_and_every_compaction_link_still_names_its_message() -> None:
    state, _ = converse(compacting_agent(tool_result_compaction), TOOL_TURNS)

    records = state["messages"]
    ids = [record["id"] for record in records]
    assert len(set(ids)) == len(ids) and all(ids)
    by_id = {record["id"]: record for record in records}
    summaries = [record for record in records if "_summary_of_message_ids" in group(record)]
    assert len(summaries) == 2  # the Paris and Tokyo tool groups, summaries inserted before later turns ran
    for summary in summaries:
        covered = group(summary)["_summary_of_message_ids"]
        assert [by_id[name]["role"] for name in covered] == ["assistant", "tool"]
        assert all(group(by_id[name])["_summarized_by_summary_id"] == summary["id"] for name in covered)
        assert all(props(by_id[name])["_excluded"] is True for name in covered)
    linked = [record for record in records if "_summarized_by_summary_id" in group(record)]
    assert sorted(record["id"] for record in linked) == sorted(
        n for s in summaries for n in group(s)["_summary_of_message_ids"]
    )


def test_failure_1_the_same_state_loaded_twice_gives_the_same_ids_and_later_turns_never_rename() -> None:
    state, _ = converse(compacting_agent(tool_result_compaction), TOOL_TURNS[:4])
    before = {record["id"]: (record["role"], record.get("text")) for record in state["messages"]}

    first = [record_to_message(record, state["agent"]).message_id for record in state["messages"]]
    CONVERSATION_CACHE.clear()
    second = [record_to_message(record, state["agent"]).message_id for record in state["messages"]]
    later, _ = converse(compacting_agent(tool_result_compaction), TOOL_TURNS[:6])

    assert first == second == list(before)
    after = {record["id"]: (record["role"], record.get("text")) for record in later["messages"]}
    assert {name: after[name] for name in before} == before  # every earlier message kept its id


# Failure 2: a summary inserted mid-history shifts positions; annotations must land on their own message.


def stored_transcript() -> list[dict[str, Any]]:
    messages = [
        Message("user", ["What is the weather in Paris?"], message_id="t1.in"),
        Message("assistant", ["Let me check."], message_id="a1"),
        Message("assistant", ["call get_weather"], message_id="call1"),
        Message("tool", ["Paris: sunny"], message_id="result1"),
        Message("assistant", ["It is sunny."], message_id="a2"),
        Message("user", ["Thanks."], message_id="t2.in"),
        Message("assistant", ["You are welcome."], message_id="a3"),
    ]
    return [message_to_record(message, 1000 + n, AGENT) for n, message in enumerate(messages)]


def test_failure_2_a_summary_inserted_mid_history_leaves_every_later_annotation_on_its_own_message() -> None:
    stored = stored_transcript()
    buffer = [record_to_message(record, AGENT) for record in stored]
    summary = Message(
        "assistant",
        ["[Tool results: get_weather: Paris: sunny]"],
        message_id="tool_summary_group_call1",
        additional_properties={"_group": {"_summary_of_message_ids": ["call1", "result1"]}},
    )
    buffer.insert(2, summary)  # what ToolResultCompactionStrategy does: everything after shifts by one
    for message in buffer[3:5]:
        message.additional_properties.update(_excluded=True, _exclude_reason="tool_result_compaction")
    buffer[5].additional_properties["_group"] = {"id": "group_a2", "kind": "assistant_text"}
    buffer[7].additional_properties["_group"] = {"id": "group_a3", "kind": "assistant_text"}

    reconciled = reconcile_by_message_id(stored, buffer, now_ms=9999, agent_name=AGENT)

    assert [record["id"] for record in reconciled] == [
        "t1.in",
        "a1",
        "tool_summary_group_call1",
        "call1",
        "result1",
        "a2",
        "t2.in",
        "a3",
    ]
    by_id = {record["id"]: record for record in reconciled}
    assert by_id["call1"]["text"] == "call get_weather" and props(by_id["call1"])["_excluded"] is True
    assert by_id["result1"]["text"] == "Paris: sunny" and props(by_id["result1"])["_excluded"] is True
    assert by_id["a2"]["text"] == "It is sunny." and props(by_id["a2"]) == {
        "_group": {"id": "group_a2", "kind": "assistant_text"}
    }
    assert by_id["a3"]["text"] == "You are welcome." and group(by_id["a3"])["id"] == "group_a3"
    assert "props" not in by_id["a1"] and "props" not in by_id["t2.in"]
    assert by_id["tool_summary_group_call1"]["at"] == 9999 and by_id["a3"]["at"] == 1006


def test_failure_2_the_summary_is_stored_right_before_the_messages_it_replaced() -> None:
    # Compaction lags one turn, as in core: the Paris group is collapsed once the Tokyo group is stored.
    state, _ = converse(compacting_agent(tool_result_compaction), TOOL_TURNS[:5])

    records = state["messages"]
    (position,) = [n for n, record in enumerate(records) if "_summary_of_message_ids" in group(record)]
    summary = records[position]
    assert summary["text"] == "[Tool results: get_weather: Paris: sunny, 15 C]"
    assert [record["id"] for record in records[position + 1 : position + 3]] == group(summary)[
        "_summary_of_message_ids"
    ]
    assert [props(record).get("_excluded", False) for record in records] == [
        n in (position + 1, position + 2) for n in range(len(records))
    ]


# Failure 3: pruning by index after an insertion deletes the wrong message; prune by identity.


def test_failure_3_follow_compaction_deletes_exactly_the_excluded_messages_after_a_summary_was_inserted() -> None:
    keep_all, _ = converse(
        compacting_agent(tool_result_compaction),
        TOOL_TURNS,
        settings=HostSettings(retention=RetentionSettings(mode="keep_all")),
    )
    following, _ = converse(
        compacting_agent(tool_result_compaction),
        TOOL_TURNS,
        settings=HostSettings(retention=RetentionSettings(mode="follow_compaction")),
    )

    def content(record: dict[str, Any]) -> tuple[str, Any]:
        return record["role"], record.get("text") or [c.get("type") for c in record["contents"]]

    excluded = [record for record in keep_all["messages"] if props(record).get("_excluded")]
    assert len(excluded) == 4  # two tool call groups, each a call and its result
    assert [content(r) for r in following["messages"]] == [
        content(r) for r in keep_all["messages"] if not props(r).get("_excluded")
    ]
    assert following["truncation"]["evictedMessages"] == 4
    assert (
        sum(record["text"].startswith(TOOL_RESULTS_PREFIX) for record in following["messages"] if "text" in record) == 2
    )


# Failure 4: annotations read on load but not written on save undo compaction every turn.


def test_failure_4_exclusions_are_written_on_save_and_still_apply_after_a_cold_start() -> None:
    log = CallLog()
    build = compacting_agent(lambda log: SlidingWindowStrategy(keep_last_groups=2))

    state, _ = converse(build, ["My name is Ada.", "I live in Lyon.", "I like tea.", "What is my name?"], log=log)

    stored = state["messages"]
    # The newest turn is annotated on the next one: after_strategy runs before the turn is saved, as in core.
    assert [props(r).get("_excluded") for r in stored] == [True, True, True, True, False, False, None, None]
    assert {props(r)["_exclude_reason"] for r in stored[:4]} == {"sliding_window"}
    assert [group(r)["kind"] for r in stored[:2]] == ["user", "assistant_text"]
    # The last turn's model call (after a cold start) was not sent what earlier turns excluded.
    assert [m["contents"][0]["text"] for m in log.calls[-1].messages] == [
        "I live in Lyon.",
        "Re: I live in Lyon. (I saw 3 messages)",
        "I like tea.",
        "Re: I like tea. (I saw 5 messages)",
        "What is my name?",
    ]


def test_failure_4_the_codec_keeps_ids_authors_contents_and_every_annotation() -> None:
    message = Message(
        "assistant",
        ["first part", "second part"],
        message_id="m-7",
        author_name="helper",
        additional_properties={
            "_excluded": True,
            "_exclude_reason": "summarized",
            "_group": {
                "id": "group_m-7",
                "kind": "assistant_text",
                "index": 3,
                "_summarized_by_summary_id": "summary_9",
            },
            "custom": [1, {"nested": True}],
        },
    )

    record = message_to_record(message, 42, AGENT)
    again = message_to_record(record_to_message(json.loads(json.dumps(record)), AGENT), 42, AGENT)

    assert again == record
    assert record["props"] == message.additional_properties
    assert record_to_message(record, AGENT).to_dict() == message.to_dict()


# Failure 5: a summary stored inside a response makes a poller receive text the agent never produced.


def test_failure_5_a_call_level_summary_is_stored_in_the_transcript_but_never_delivered() -> None:
    def build(log: CallLog) -> Agent:
        return Agent(
            RecordingChatClient(log),
            "Be brief.",
            name="assistant",
            tools=[get_weather, get_time],
            compaction_strategy=ToolResultCompactionStrategy(keep_last_tool_call_groups=1),
        )

    state, records = converse(build, ["call get_weather city=Paris, get_time city=Tokyo, get_weather city=Oslo"])

    (record,) = records
    assert (
        record["text"]
        == "The tools said: get_weather: Paris: sunny, 15 C; get_time: Tokyo: 6 o'clock; Oslo: sunny, 14 C"
    )
    assert all(TOOL_RESULTS_PREFIX not in (m.get("text") or "") for m in record["messages"])
    stored_summaries = [r for r in state["messages"] if "_summary_of_message_ids" in group(r)]
    assert [r["text"] for r in stored_summaries] == [
        "[Tool results: get_weather: Paris: sunny, 15 C]",
        "[Tool results: get_time: Tokyo: 6 o'clock]",
    ]


def test_failure_5_turn_results_stay_as_delivered_when_later_compaction_summarizes_their_messages() -> None:
    build = compacting_agent(
        lambda log: SummarizationStrategy(client=RecordingChatClient(log, summarizer=True), target_count=2, threshold=0)
    )

    state, records = converse(build, ["My name is Ada.", "I live in Lyon.", "I like tea.", "What is my name?"])

    assert any("_summary_of_message_ids" in group(r) for r in state["messages"])
    assert delivered(state, "t0")["text"] == records[0]["text"] == "Re: My name is Ada. (I saw 1 messages)"
    answers = [delivered(state, turn_id) for turn_id in state["turns"]]
    assert all("Summary:" not in answer["text"] for answer in answers)
    assert all("_summary_of_message_ids" not in group(m) for answer in answers for m in answer["messages"])
