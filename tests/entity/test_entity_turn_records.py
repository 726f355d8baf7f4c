"""Turn records name the transcript messages holding their answers, and keep what they delivered when those change.

An answer is stored once; before compaction rewrites or retention deletes a message a turn record names, the
delivered copy moves into the record, so a caller reading the turn later gets exactly what was delivered.
"""

from __future__ import annotations

from agent_framework import CompactionProvider, InMemoryHistoryProvider, SlidingWindowStrategy
from apps import build_app, driver_for, make_agent
from batches import EntityDriver, delivered

from agent_host import HostSettings, OfflineChatClient, RetentionSettings
from agent_host._conversation.state import decode_state


def plain_driver(settings: HostSettings | None = None) -> EntityDriver:
    return driver_for(build_app(make_agent(OfflineChatClient()), settings=settings), "assistant")


def test_a_turn_record_names_the_answer_the_transcript_holds() -> None:
    driver = plain_driver()
    driver.run_turn("t1", "My name is Ada.")
    record = driver.run_turn("t2", "What is my name?")

    state = driver.decoded()
    answer = state["messages"][-1]
    assert state["turns"]["t2"]["messages"] == [answer["id"]]
    assert "author" not in answer  # the agent's own name is implied
    assert record["messages"] == [answer]
    assert record["text"] == answer["text"] == "[offline model] Your name is Ada."


def test_retention_expires_a_turn_record_whose_answer_it_evicted() -> None:
    # The receipt names its answer; once retention deletes that message the turn answers 410 instead of keeping a
    # copy that would crowd out the conversation (failure 14).
    settings = HostSettings(max_turn_records=50, retention=RetentionSettings(mode="auto", max_state_bytes=8192))
    driver = plain_driver(settings)
    driver.run_turn("t00", "My name is Ada.")
    first = driver.decoded()
    delivered_answer = first["messages"][-1]
    assert first["turns"]["t00"]["messages"] == [delivered_answer["id"]]

    number = 0
    while any(record["id"] == delivered_answer["id"] for record in driver.decoded()["messages"]):
        number += 1
        assert number < 200, "retention never evicted the first answer"
        driver.run_turn(f"t{number:02d}", f"Fact {number}: a sentence long enough to fill the budget soon.")

    state = decode_state(driver.state or "")  # every record still names only messages the transcript holds
    assert state["truncation"]["evictedMessages"] > 0
    assert "t00" not in state["turns"] and "t00" in state["expiredTurns"]
    named = [m for record in state["turns"].values() for m in record["messages"]]
    assert named and all(isinstance(m, str) for m in named), "answers still in the transcript are named, not copied"


def test_an_answer_compaction_annotates_later_keeps_its_delivered_form_in_the_turn_record() -> None:
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SlidingWindowStrategy(keep_last_groups=2), history_source_id=history.source_id
    )
    agent = make_agent(OfflineChatClient(), context_providers=[history, compaction])
    driver = driver_for(build_app(agent), "assistant")
    driver.run_turn("t1", "My name is Ada.")
    at_delivery = driver.decoded()
    delivered_answer = at_delivery["messages"][-1]
    assert at_delivery["turns"]["t1"]["messages"] == [delivered_answer["id"]]

    for number in range(2, 6):
        driver.run_turn(f"t{number}", f"Fact {number}.")

    state = driver.decoded()
    (now_stored,) = [record for record in state["messages"] if record["id"] == delivered_answer["id"]]
    assert now_stored["props"] != delivered_answer.get("props")  # compaction excluded it since
    assert now_stored["props"]["_excluded"] is True
    assert state["turns"]["t1"]["messages"] == [delivered_answer]
    assert delivered(state, "t1")["messages"] == [delivered_answer]


def test_a_receipt_keeps_the_stored_size_its_turn_began_with() -> None:
    driver = plain_driver()
    driver.run_turn("t1", "My name is Ada.")
    after_first = len((driver.state or "").encode("utf-8"))
    driver.run_turn("t2", "What is my name?")

    turns = driver.decoded()["turns"]
    assert "stateBytes" not in turns["t1"]  # a new conversation had no stored state
    assert turns["t2"]["stateBytes"] == after_first
