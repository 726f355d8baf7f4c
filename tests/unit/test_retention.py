"""Retention as a pure function over the stored state: what is evicted, what must survive, and what is reported."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest
from agent_framework import Content, Message

from agent_host import RetentionSettings, StateCapacityExceededError
from agent_host._conversation import retention
from agent_host._conversation.retention import (
    RECEIPT_SHARE,
    AutoStrategy,
    FollowCompactionStrategy,
    KeepAllStrategy,
    ReceiptPolicy,
    RetentionStrategy,
    apply_retention_settings,
    enforce_retention,
    make_room_for_turn,
    retain_after_turn,
    state_bytes,
    strategy_for,
)
from agent_host._conversation.state import decode_state, encode_state, new_state
from agent_host._records import message_to_record

NOW = 1_700_000_000_000
LATER = NOW + 5_000
RECEIPTS = ReceiptPolicy(max_records=100)


def text(message_id: str, role: str, body: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": message_id, "role": role, "text": body, "at": NOW}
    if props is not None:
        record["props"] = props
    return record


def exchange(number: int, padding: int = 120) -> list[dict[str, Any]]:
    return [
        text(f"t{number}.in", "user", f"question {number} " + "q" * padding),
        text(f"t{number}.0", "assistant", f"answer {number} " + "a" * padding),
    ]


def tool_group(call_id: str, *, results: int = 1, size: int = 600) -> list[dict[str, Any]]:
    """An assistant message calling a tool `results` times and one tool message per result: no text at all."""
    calls = [
        Content.from_function_call(f"{call_id}-{n}", "lookup", arguments=json.dumps({"query": "x" * (size // 4)}))
        for n in range(results)
    ]
    records = [message_to_record(Message("assistant", calls, message_id=f"{call_id}.call"), NOW, None)]
    for n in range(results):
        result = Content.from_function_result(f"{call_id}-{n}", result="r" * size)
        records.append(message_to_record(Message("tool", [result], message_id=f"{call_id}.result{n}"), NOW, None))
    return records


def state_of(records: list[dict[str, Any]], *, mode: str = "auto", budget: int = 4096) -> dict[str, Any]:
    state = new_state("assistant", "c1", RetentionSettings(mode=mode, max_state_bytes=budget), NOW)
    state["messages"] = records
    return state


def budget_for(state: dict[str, Any], fill: float) -> int:
    """A budget the state fills to `fill` (0.9: over the high watermark; 0.8: between the watermarks)."""
    return int(state_bytes(state) / fill)


def with_budget(state: dict[str, Any], budget: int) -> dict[str, Any]:
    state["retention"] = {**state["retention"], "maxStateBytes": budget}
    return state


def low_bytes(state: dict[str, Any]) -> int:
    return int(state["retention"]["maxStateBytes"] * state["retention"]["lowWatermark"])


def survivors_ids(state: dict[str, Any]) -> list[str]:
    return [record["id"] for record in state["messages"]]


def call_ids(records: list[dict[str, Any]], kind: str) -> set[str]:
    return {
        content["call_id"] for record in records for content in record.get("contents", []) if content["type"] == kind
    }


# -- auto ---------------------------------------------------------------------------------------------------------


def test_auto_evicts_the_oldest_groups_down_to_the_low_watermark_and_no_further() -> None:
    records = [record for number in range(30) for record in exchange(number)]
    state = state_of(records)
    with_budget(state, budget_for(state, 0.9))
    before = copy.deepcopy(state)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    kept = outcome.state["messages"]
    evicted = len(records) - len(kept)
    assert kept == records[evicted:]
    assert outcome.evicted_ids == tuple(record["id"] for record in records[:evicted])
    assert outcome.text == encode_state(outcome.state)
    assert outcome.state_bytes == len(outcome.text.encode("utf-8")) <= low_bytes(state)
    one_group_back = {**outcome.state, "messages": records[evicted - 1 :]}
    assert state_bytes(one_group_back) > low_bytes(state)
    assert outcome.state["truncation"] == {
        "evictedMessages": evicted,
        "expiredAnswers": 0,
        "firstEvictedAt": LATER,
        "lastEvictedAt": LATER,
    }
    assert "capacityError" not in outcome.state
    assert state == before  # the input is never modified
    decode_state(outcome.text)  # still valid stored state


def test_auto_leaves_a_state_below_the_high_watermark_alone() -> None:
    state = state_of([record for number in range(30) for record in exchange(number)])
    with_budget(state, budget_for(state, 0.8))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.state is state
    assert outcome.evicted_ids == ()
    assert outcome.text == encode_state(state)


def test_truncation_record_keeps_the_first_eviction_time_and_counts_every_eviction() -> None:
    state = state_of([record for number in range(30) for record in exchange(number)])
    with_budget(state, budget_for(state, 0.9))
    first = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS).state
    grown = {**first, "messages": first["messages"] + [r for n in range(30, 45) for r in exchange(n)]}
    with_budget(grown, budget_for(grown, 0.9))

    second = enforce_retention(grown, now_ms=LATER + 1, receipts=RECEIPTS).state

    assert second["truncation"]["firstEvictedAt"] == LATER
    assert second["truncation"]["lastEvictedAt"] == LATER + 1
    assert second["truncation"]["evictedMessages"] == first["truncation"]["evictedMessages"] + (
        len(grown["messages"]) - len(second["messages"])
    )


def test_every_eviction_is_logged_with_the_conversation(caplog: pytest.LogCaptureFixture) -> None:
    state = state_of([record for number in range(30) for record in exchange(number)])
    with_budget(state, budget_for(state, 0.9))

    with caplog.at_level(logging.INFO, logger="agent_host.retention"):
        outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    lines = [record.getMessage() for record in caplog.records if record.name == "agent_host.retention"]
    assert any(
        f"evicted {len(outcome.evicted_ids)} messages and dropped 0 turn answers of conversation c1" in line
        for line in lines
    )


# -- what may not be evicted ---------------------------------------------------------------------------------------


def test_tool_only_history_is_budgeted_on_its_persisted_bytes() -> None:
    # Failure 6: no message here has any text; a budget computed from text would call all of it free or evict it all.
    records = [record for number in range(12) for record in tool_group(f"call{number}")]
    state = state_of(records)
    with_budget(state, budget_for(state, 0.9))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    kept = outcome.state["messages"]
    evicted = len(records) - len(kept)
    assert kept == records[evicted:]
    assert evicted % 2 == 0 and 0 < evicted < len(records) - 2  # whole groups, and far from all of them
    assert outcome.state_bytes <= low_bytes(state)
    assert state_bytes({**outcome.state, "messages": records[evicted - 2 :]}) > low_bytes(state)


def test_tool_groups_are_evicted_whole_even_when_their_messages_are_not_adjacent() -> None:
    # An assistant text sits between a call and its result: core links them into one group, a naive grouping won't.
    linked = tool_group("linked", results=1, size=3600)
    between = text("between", "assistant", "thinking out loud " + "b" * 400)
    records = [
        *tool_group("multi", results=3, size=2000),
        linked[0],
        between,
        linked[1],
        *[record for number in range(6) for record in exchange(number, padding=480)],
    ]
    state = state_of(records)
    for fill in (0.86, 0.9, 0.95, 0.99, 1.2, 1.6, 2.0, 2.5):
        with_budget(state, budget_for(state_of(records), fill))

        kept = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS).state["messages"]

        assert call_ids(kept, "function_call") == call_ids(kept, "function_result")
        kept_ids = set(survivors_ids({"messages": kept}))
        assert ("linked.call" in kept_ids) == ("linked.result0" in kept_ids)
        assert len({"multi.call", "multi.result0", "multi.result1", "multi.result2"} & kept_ids) in (0, 4)


def test_system_messages_survive_a_budget_that_takes_everything_else() -> None:
    # Failure 7.
    records = [
        text("sys1", "system", "You are careful. " + "s" * 1000),
        *[record for number in range(8) for record in exchange(number, padding=400)],
        text("sys2", "system", "Mid-conversation instruction. " + "s" * 1000),
        *[record for number in range(8, 16) for record in exchange(number, padding=400)],
        *exchange(99, padding=400),
    ]
    state = state_of(records)
    protected = [records[0], records[17], *exchange(99, padding=400)]
    with_budget(state, int(state_bytes(state_of(protected)) / 0.69))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.state["messages"] == protected
    assert outcome.state["truncation"]["evictedMessages"] == len(records) - len(protected)
    assert "capacityError" not in outcome.state


def test_newest_exchange_alone_over_the_budget_wipes_nothing_and_reports_capacity() -> None:
    records = [
        *[record for number in range(10) for record in exchange(number)],
        text("t99.in", "user", "Please read this: " + "x" * 6000),
        text("t99.0", "assistant", "Read it. " + "y" * 200),
    ]
    state = state_of(records, budget=4096)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.state["messages"] == records
    assert outcome.state["truncation"] == {"evictedMessages": 0, "expiredAnswers": 0}
    error = outcome.state["capacityError"]
    assert error["code"] == "state_capacity_exceeded"
    assert "4096-byte budget" in error["message"] and "Nothing was deleted" in error["message"]
    assert outcome.text == encode_state(outcome.state)


def test_capacity_error_is_cleared_once_the_state_fits_again() -> None:
    state = state_of([record for number in range(4) for record in exchange(number)], budget=100_000)
    state["capacityError"] = {"code": "state_capacity_exceeded", "message": "earlier"}

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert "capacityError" not in outcome.state
    assert outcome.text == encode_state(outcome.state)


def delivered_copy(record: dict[str, Any]) -> dict[str, Any]:
    """An answer as it was delivered, before compaction changed the transcript's copy."""
    return {**record, "text": "as delivered"}


def receipt(answer: dict[str, Any], *, copy_answer: bool) -> dict[str, Any]:
    return {"status": "completed", "messages": [answer if copy_answer else answer["id"]], "at": NOW}


def test_answer_copies_go_before_any_conversation_message() -> None:
    # Failure 14: answers copied into receipts (compaction changed them since) are the first thing pressure takes.
    records = [record for number in range(30) for record in exchange(number)]
    state = state_of(records)
    answers = [{**records[2 * n + 1], "text": "as delivered " + "d" * 700} for n in range(4)]
    state["turns"] = {f"t{n}": receipt(answer, copy_answer=True) for n, answer in enumerate(answers)}
    state["turns"]["t29"] = receipt(records[-1], copy_answer=False)
    with_budget(state, budget_for(state, 0.86))
    without_copies = {**state, "turns": {"t29": state["turns"]["t29"]}, "expiredTurns": ["t0", "t1", "t2", "t3"]}
    assert len(encode_state(state["turns"])) <= state["retention"]["maxStateBytes"] * RECEIPT_SHARE  # within share
    assert state_bytes(without_copies) + 40 <= low_bytes(state)  # dropping the copies alone is enough

    outcome = enforce_retention(state, now_ms=LATER, receipts=ReceiptPolicy(max_records=100, protected_turn="t29"))

    assert outcome.evicted_ids == ()
    assert outcome.state["messages"] == records
    assert set(outcome.state["turns"]) == {"t29"}
    assert outcome.state["expiredTurns"] == ["t0", "t1", "t2", "t3"]
    assert outcome.expired_turns == ("t0", "t1", "t2", "t3")
    assert outcome.state["truncation"]["expiredAnswers"] == 4
    assert outcome.state_bytes <= low_bytes(state)


def test_a_receipt_naming_an_evicted_answer_expires_with_it_and_the_delivered_turn_keeps_its_own() -> None:
    records = [record for number in range(30) for record in exchange(number)]
    state = state_of(records)
    state["turns"] = {f"t{n}": receipt(records[2 * n + 1], copy_answer=False) for n in range(30)}
    with_budget(state, budget_for(state, 0.9))

    outcome = enforce_retention(state, now_ms=LATER, receipts=ReceiptPolicy(max_records=100, protected_turn="t29"))

    evicted = set(outcome.evicted_ids)
    assert evicted
    gone = [f"t{n}" for n in range(30) if records[2 * n + 1]["id"] in evicted]
    assert gone and outcome.state["expiredTurns"] == gone
    assert outcome.state["turns"]["t29"] == state["turns"]["t29"]
    assert all(isinstance(m, str) for record in outcome.state["turns"].values() for m in record["messages"])
    decode_state(outcome.text)  # every receipt left names a message the transcript still holds
    assert outcome.state_bytes <= low_bytes(state)


def test_receipts_take_at_most_their_share_of_the_budget_in_every_mode() -> None:
    records = [record for number in range(3) for record in exchange(number)]
    for mode in ("keep_all", "auto", "follow_compaction"):
        state = state_of(records, mode=mode, budget=16_384)
        state["turns"] = {
            f"t{n:03d}": {"status": "failed", "error": {"code": "turn_failed", "message": "x" * 80}, "at": NOW + n}
            for n in range(60)
        }
        state["turns"]["t059"] = receipt(records[-1], copy_answer=False)

        outcome = enforce_retention(state, now_ms=LATER, receipts=ReceiptPolicy(max_records=100, protected_turn="t059"))

        share = int(16_384 * RECEIPT_SHARE)
        kept = outcome.state["turns"]
        assert len(encode_state(kept)) + len(encode_state(outcome.state["expiredTurns"])) <= share
        assert "t059" in kept and list(kept)[-1] == "t059"
        assert outcome.state["expiredTurns"] == [f"t{n:03d}" for n in range(60) if f"t{n:03d}" not in kept]
        assert outcome.state["messages"] == records  # receipts went; no conversation message did


# -- compaction exclusions -----------------------------------------------------------------------------------------


def excluded(reason: str, group: str) -> dict[str, Any]:
    return {"_excluded": True, "_exclude_reason": reason, "_group": {"id": group, "kind": "user", "index": 0}}


def included(group: str) -> dict[str, Any]:
    return {"_excluded": False, "_group": {"id": group, "kind": "user", "index": 0}}


def test_auto_treats_exclusions_as_no_consent_and_every_survivor_keeps_its_annotation() -> None:
    # The newest evictable messages are excluded, the oldest are not: age decides, exclusions are neither
    # preferred victims nor free of bytes.
    records = [record for number in range(30) for record in exchange(number, padding=60)]
    for number, record in enumerate(records[:-2]):
        record["props"] = included(f"g{number}") if number < 20 else excluded("sliding_window", f"g{number}")
    state = state_of(records)
    with_budget(state, budget_for(state, 0.9))
    annotations = {record["id"]: copy.deepcopy(record.get("props")) for record in records}

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    kept = outcome.state["messages"]
    evicted = len(records) - len(kept)
    assert 0 < evicted <= 20
    assert kept == records[evicted:]
    assert all(record.get("props") == annotations[record["id"]] for record in kept)
    assert sum(1 for record in kept if (record.get("props") or {}).get("_excluded")) == 38


def test_auto_without_pressure_keeps_what_compaction_excluded() -> None:
    records = [record for number in range(10) for record in exchange(number)]
    for number, record in enumerate(records[:10]):
        record["props"] = excluded("sliding_window", f"g{number}")
    state = state_of(records, budget=1_000_000)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.state["messages"] == records
    assert outcome.followed_ids == ()


def test_follow_compaction_deletes_excluded_groups_but_not_protected_or_partly_included_ones() -> None:
    group = tool_group("half", results=1, size=100)
    group[0]["props"] = excluded("tool_result_compaction", "gh")  # the call is excluded, its result is not
    group[1]["props"] = included("gh")
    records = [
        text("sys", "system", "Rules.", props=excluded("truncation", "gs")),
        text("old1", "user", "old one", props=excluded("sliding_window", "g1")),
        text("old2", "assistant", "old two", props=excluded("sliding_window", "g2")),
        *group,
        text("kept", "user", "kept", props=included("g3")),
        text("t9.in", "user", "newest", props=excluded("sliding_window", "g4")),
        text("t9.0", "assistant", "newest answer"),
    ]
    state = state_of(records, mode="follow_compaction", budget=1_000_000)
    annotations = copy.deepcopy(records)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.followed_ids == ("old1", "old2")
    assert survivors_ids(outcome.state) == ["sys", "half.call", "half.result0", "kept", "t9.in", "t9.0"]
    assert outcome.state["messages"] == [record for record in annotations if record["id"] not in {"old1", "old2"}]
    assert outcome.state["truncation"]["evictedMessages"] == 2


def test_follow_compaction_then_evicts_under_pressure_like_auto() -> None:
    records = [record for number in range(30) for record in exchange(number)]
    for number, record in enumerate(records[:4]):
        record["props"] = excluded("sliding_window", f"g{number}")
    state = state_of(records, mode="follow_compaction")
    with_budget(state, budget_for(state, 0.95))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.followed_ids == ("t0.in", "t0.0", "t1.in", "t1.0")
    assert outcome.evicted_ids and outcome.evicted_ids[0] == "t2.in"
    assert outcome.state_bytes <= low_bytes(state)


# -- summaries: a summary and what it stands for -----------------------------------------------------------------


def summary_of(message_id: str, ids: list[str], *, by: str | None = None) -> dict[str, Any]:
    """A compaction summary standing for `ids`; itself summarized into `by` when given."""
    group: dict[str, Any] = {"id": f"group_{message_id}", "kind": "assistant_text", "index": 0}
    group["_summary_of_message_ids"] = list(ids)
    props: dict[str, Any] = {"_excluded": False, "_group": group}
    if by is not None:
        props.update(_excluded=True, _exclude_reason="summarized")
        group["_summarized_by_summary_id"] = by
    return text(message_id, "assistant", f"Summary of {len(ids)} earlier messages. " + "s" * 60, props)


def summarized(record: dict[str, Any], by: str) -> dict[str, Any]:
    record["props"] = {
        "_excluded": True,
        "_exclude_reason": "summarized",
        "_group": {"id": f"group_{record['id']}", "kind": "user", "index": 0, "_summarized_by_summary_id": by},
    }
    return record


def orphans(records: list[dict[str, Any]]) -> list[str]:
    """Stored messages linked to a summary that is not stored."""
    stored = {record["id"] for record in records}
    links = {r["id"]: (r.get("props") or {}).get("_group", {}).get("_summarized_by_summary_id") for r in records}
    return [message_id for message_id, link in links.items() if link is not None and link not in stored]


def test_auto_evicts_what_a_stored_summary_stands_for_before_anything_the_model_is_sent() -> None:
    stood_for = [summarized(record, "s1") for number in range(10) for record in exchange(number)]
    newer = [record for number in range(10, 30) for record in exchange(number)]
    records = [summary_of("s1", [r["id"] for r in stood_for]), *stood_for, *newer]
    state = state_of(records)
    with_budget(state, budget_for(state, 0.9))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    evicted = len(records) - len(outcome.state["messages"])
    assert 0 < evicted < len(stood_for)  # the control: pressure took part of what the summary stands for
    assert outcome.evicted_ids == tuple(record["id"] for record in stood_for[:evicted])
    assert outcome.state["messages"] == [records[0], *stood_for[evicted:], *newer]
    assert outcome.state_bytes <= low_bytes(state)


@pytest.mark.parametrize("fill", [0.87, 0.9, 0.95, 1.1, 1.6, 3.0])
def test_a_summary_of_summaries_never_leaves_before_what_it_stands_for(fill: float) -> None:
    # Core inserts a summary where the oldest message it replaced stood: s2 stands for s1 and a*, s1 for m*.
    first = [summarized(record, "s1") for number in range(4) for record in exchange(number, padding=400)]
    second = [summarized(record, "s2") for number in range(4, 6) for record in exchange(number, padding=400)]
    older_summary = summary_of("s1", [r["id"] for r in first], by="s2")
    live = summary_of("s2", ["s1", *(r["id"] for r in second)])
    newer = [record for number in range(6, 20) for record in exchange(number, padding=400)]
    records = [live, older_summary, *first, *second, *newer]
    state = state_of(records)
    with_budget(state, budget_for(state, fill))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    kept = survivors_ids(outcome.state)
    assert outcome.evicted_ids  # the control: every fill is over the high watermark
    assert orphans(outcome.state["messages"]) == []
    assert [record for record in records if record["id"] in kept] == outcome.state["messages"]  # as written
    # What the model is not sent goes first, and s1 only after the messages it stands for; then by age.
    order = [r["id"] for r in (*first, *second)] + ["s1", "s2"] + [r["id"] for r in newer]
    assert set(outcome.evicted_ids) == set(order[: len(outcome.evicted_ids)])
    assert list(outcome.evicted_ids) == [record["id"] for record in records if record["id"] in outcome.evicted_ids]
    assert kept[-2:] == ["t19.in", "t19.0"]


def test_a_summary_standing_for_a_message_that_may_not_be_evicted_stays() -> None:
    records = [record for number in range(12) for record in exchange(number)]
    newest = summarized(records[-2], "s1")  # odd, but a summary may stand for the newest exchange's question
    records.insert(0, summary_of("s1", [newest["id"]]))
    state = state_of(records, budget=4096)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    kept = survivors_ids(outcome.state)
    assert outcome.evicted_ids[0] == "t0.in"  # s1 is the oldest message, and stays
    assert kept[0] == "s1" and kept[-2:] == ["t11.in", "t11.0"] and len(kept) < len(records) / 2
    assert orphans(outcome.state["messages"]) == []


def test_follow_compaction_keeps_a_summary_a_staying_message_is_linked_to() -> None:
    group = tool_group("half", results=1, size=100)
    summarized(group[0], "s1")  # the call is summarized, its result is not: the group stays
    group[1]["props"] = included("group_half.call")
    whole = tool_group("whole", results=1, size=100)
    for record in whole:
        summarized(record, "s2")
    records = [
        {**summary_of("s1", ["half.call"]), "props": excluded("sliding_window", "group_s1")},
        {**summary_of("s2", [r["id"] for r in whole]), "props": excluded("sliding_window", "group_s2")},
        *group,
        *whole,
        text("t9.in", "user", "newest"),
        text("t9.0", "assistant", "newest answer"),
    ]
    records[0]["props"]["_group"]["_summary_of_message_ids"] = ["half.call"]
    records[1]["props"]["_group"]["_summary_of_message_ids"] = [r["id"] for r in whole]
    state = state_of(records, mode="follow_compaction", budget=1_000_000)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    # s2 and everything it stands for were excluded whole and go; s1 stays while half.call does.
    assert outcome.followed_ids == ("s2", "whole.call", "whole.result0")
    assert survivors_ids(outcome.state) == ["s1", "half.call", "half.result0", "t9.in", "t9.0"]
    assert orphans(outcome.state["messages"]) == []


def test_a_message_excluded_by_a_summary_no_longer_stored_is_included_again(caplog: pytest.LogCaptureFixture) -> None:
    # What retention before failure 18's fix left behind: the summary evicted, what it stood for stored and excluded.
    lost = [summarized(record, "summary_gone") for record in exchange(0)]
    covered = [summarized(record, "s1") for record in exchange(1)]
    records = [*lost, summary_of("s1", [r["id"] for r in covered]), *covered, *exchange(2)]
    state = state_of(records, budget=1_000_000)
    before = copy.deepcopy(state)

    with caplog.at_level(logging.WARNING, logger="agent_host.retention"):
        outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    repaired = outcome.state["messages"]
    assert [record.get("props") for record in repaired[:2]] == [
        {"_group": {"id": "group_t0.in", "kind": "user", "index": 0}},
        {"_group": {"id": "group_t0.0", "kind": "user", "index": 0}},
    ]
    assert repaired[2:] == records[2:]  # what a stored summary stands for stays excluded
    assert outcome.evicted_ids == () and outcome.text == encode_state(outcome.state)
    assert "Conversation c1: included 2 messages again whose summary is no longer stored" in caplog.text
    assert state == before


# -- keep_all ------------------------------------------------------------------------------------------------------


def test_keep_all_refuses_a_turn_that_would_go_over_the_budget_and_names_the_way_out() -> None:
    state = state_of([record for number in range(20) for record in exchange(number)], mode="keep_all")
    size = state_bytes(state)
    with_budget(state, size + 50)
    incoming = text("t20.in", "user", "one more " + "z" * 60)

    with pytest.raises(StateCapacityExceededError) as raised:
        make_room_for_turn(state, incoming, RECEIPTS)

    message = raised.value.message
    grown = size + len(encode_state(incoming)) + 1
    assert raised.value.code == "state_capacity_exceeded" and raised.value.status == 507
    assert f"would grow to {grown} bytes" in message and f"its {size + 50}-byte budget" in message
    assert "'auto'" in message and "'follow_compaction'" in message and "maxStateBytes" in message


def test_keep_all_drops_turn_receipts_before_it_refuses_a_turn() -> None:
    records = [record for number in range(20) for record in exchange(number)]
    state = state_of(records, mode="keep_all")
    state["turns"] = {
        f"t{n}": receipt({**records[2 * n + 1], "text": "as delivered"}, copy_answer=True) for n in range(20)
    }
    incoming = text("t20.in", "user", "one more " + "z" * 60)
    with_budget(state, state_bytes({**state, "turns": {}}) + 600)

    room = make_room_for_turn(state, incoming, RECEIPTS)

    assert room["messages"] == records
    kept = list(room["turns"])
    assert kept and kept == [f"t{n}" for n in range(20 - len(kept), 20)]  # the oldest receipts went
    assert room["expiredTurns"] == [f"t{n}" for n in range(20 - len(kept))]
    assert state_bytes(room) + len(encode_state(incoming)) + 1 <= room["retention"]["maxStateBytes"]
    assert room["truncation"]["expiredAnswers"] == 20 - len(kept)


def test_keep_all_lets_a_turn_in_while_it_fits() -> None:
    state = state_of([record for number in range(20) for record in exchange(number)], mode="keep_all")
    with_budget(state, state_bytes(state) + 500)

    assert make_room_for_turn(state, text("t20.in", "user", "short"), RECEIPTS) is state


def test_other_modes_never_refuse_a_turn() -> None:
    for mode in ("auto", "follow_compaction"):
        state = state_of([record for number in range(20) for record in exchange(number)], mode=mode)
        with_budget(state, 4096)
        assert make_room_for_turn(state, text("t20.in", "user", "x" * 5000), RECEIPTS) is state


def test_keep_all_never_evicts_and_leaves_reporting_to_the_next_turns_refusal() -> None:
    records = [record for number in range(30) for record in exchange(number)]
    state = state_of(records, mode="keep_all")
    state["capacityError"] = {"code": "state_capacity_exceeded", "message": "an earlier refusal"}
    with_budget(state, budget_for(state, 1.1))

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS)

    assert outcome.state["messages"] == records
    assert outcome.state["truncation"] == {"evictedMessages": 0, "expiredAnswers": 0}
    assert "capacityError" not in outcome.state  # this turn completed; the next one is checked before it runs
    assert outcome.state_bytes > state["retention"]["maxStateBytes"]


# -- settings ------------------------------------------------------------------------------------------------------


def test_new_settings_clear_a_capacity_error_the_state_no_longer_has() -> None:
    state = state_of([record for number in range(20) for record in exchange(number)], mode="keep_all", budget=4096)
    state["capacityError"] = {"code": "state_capacity_exceeded", "message": "over"}

    roomy = apply_retention_settings(state, RetentionSettings(mode="keep_all", max_state_bytes=1_000_000), LATER)
    still_tight = apply_retention_settings(state, RetentionSettings(mode="auto", max_state_bytes=4096), LATER)

    assert "capacityError" not in roomy and roomy["retention"]["maxStateBytes"] == 1_000_000
    assert still_tight["capacityError"]["message"] == "over" and still_tight["retention"]["mode"] == "auto"
    assert state["retention"]["mode"] == "keep_all"  # the input is not modified


def test_a_refused_keep_all_turn_pushes_older_receipts_out_rather_than_the_state_over_its_budget() -> None:
    records = [record for number in range(20) for record in exchange(number)]
    state = state_of(records, mode="keep_all")
    state["turns"] = {f"t{n}": receipt(records[2 * n + 1], copy_answer=False) for n in range(20)}
    with_budget(state, state_bytes(state) + 100)
    refusal = {"status": "failed", "error": {"code": "state_capacity_exceeded", "message": "x" * 300}, "at": LATER}
    refused = {**state, "turns": {**state["turns"], "t20": refusal}}

    kept, text = retain_after_turn(refused, refusal, now_ms=LATER, text=encode_state(refused), receipts=RECEIPTS)

    assert len(text.encode()) <= kept["retention"]["maxStateBytes"]
    assert kept["messages"] == records and kept["turns"]["t20"] == refusal
    assert kept["expiredTurns"] == [f"t{n}" for n in range(len(kept["expiredTurns"]))] != []
    assert kept["capacityError"] == refusal["error"]


# -- strategies ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "strategy"),
    [("keep_all", KeepAllStrategy), ("auto", AutoStrategy), ("follow_compaction", FollowCompactionStrategy)],
)
def test_each_mode_is_one_strategy_holding_the_conversations_settings(
    mode: str, strategy: type[RetentionStrategy]
) -> None:
    settings = RetentionSettings(mode=mode, max_state_bytes=8192)

    chosen = strategy_for(settings)

    assert type(chosen) is strategy
    assert chosen.mode == mode
    assert chosen.settings is settings


@pytest.mark.parametrize("mode", ["keep_all", "auto", "follow_compaction"])
def test_a_decision_encodes_each_state_it_makes_and_measures_each_receipt_once(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [record for number in range(30) for record in exchange(number)]
    state = state_of(records, mode=mode)
    # The messages fill 70% of the budget and the receipts far more than their share: trimmed to it, the state is
    # within the budget (keep_all) and over the high watermark (the others evict).
    with_budget(state, budget_for(state_of(records), 0.7))
    state["turns"] = {
        f"t{n:03d}": {"status": "failed", "error": {"code": "turn_failed", "message": "x" * 80}, "at": NOW + n}
        for n in range(60)
    }
    encoded: list[dict[str, Any]] = []
    measured: list[dict[str, Any]] = []

    def counting(value: Any) -> str:
        # Held, so no two of them share an id().
        if isinstance(value, dict) and "conversationId" in value:
            encoded.append(value)
        elif isinstance(value, dict) and "status" in value:
            measured.append(value)
        return encode_state(value)

    monkeypatch.setattr(retention, "encode_state", counting)

    outcome = enforce_retention(state, now_ms=LATER, receipts=RECEIPTS, text=encode_state(state))

    assert len({id(value) for value in encoded}) == len(encoded)
    assert len({id(value) for value in measured}) == len(measured) == 60  # each turn receipt measured once
    assert outcome.expired_turns  # the controls: receipts were trimmed and, but under keep_all, messages evicted
    assert bool(outcome.evicted_ids) is (mode != "keep_all")
