"""Retention wired into the conversation entity: real agents, the host's JSON batches, state fed back as a string."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import pytest
from agent_framework import CompactionProvider, InMemoryHistoryProvider, Message, SlidingWindowStrategy, tool
from apps import build_app, driver_for, make_agent
from batches import EntityDriver, delivered

from agent_host import HostSettings, OfflineChatClient, RetentionSettings
from agent_host._errors import status_for_code

BUDGET = 8192
# Turn records are bounded on their own (AGENT_HOST_MAX_TURN_RECORDS); few here, so the transcript fills the budget.
TURN_RECORDS = 4


@tool
def get_weather(city: Annotated[str, "The city."]) -> str:
    """Today's weather for a city."""
    return f"The weather in {city} is sunny, 21 degrees, with a light breeze from the west all afternoon."


class CountingOfflineClient(OfflineChatClient):
    """The offline model, counting its calls."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = 0

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Any:
        self.calls += 1
        return await super()._inner_get_response(messages=messages, stream=stream, options=options, **kwargs)


def conversation_messages(turns: int) -> list[str]:
    """The same conversation for every mode: facts, tool calls and filler."""
    messages = []
    for number in range(turns):
        if number % 4 == 1:
            messages.append(f"use get_weather for City{number}")
        else:
            messages.append(f"My fact{number} is value{number}, noted on turn {number} of this long conversation.")
    return messages


def retention_driver(
    mode: str, client: OfflineChatClient | None = None, *, budget: int = BUDGET, turn_receipts: int = TURN_RECORDS
) -> EntityDriver:
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SlidingWindowStrategy(keep_last_groups=6), history_source_id=history.source_id
    )
    agent = make_agent(client or OfflineChatClient(), tools=[get_weather], context_providers=[history, compaction])
    settings = HostSettings(
        max_turn_records=turn_receipts, retention=RetentionSettings(mode=mode, max_state_bytes=budget)
    )
    return driver_for(build_app(agent, settings=settings), "assistant")


def stored_bytes(driver: EntityDriver) -> int:
    assert driver.state is not None
    return len(driver.state.encode("utf-8"))


@pytest.mark.parametrize("mode", ["auto", "follow_compaction"])
def test_a_long_conversation_stays_under_its_budget(mode: str) -> None:
    driver = retention_driver(mode)
    sizes = []
    for number, message in enumerate(conversation_messages(30)):
        record = driver.run_turn(f"t{number:03d}", message)
        assert record["status"] == "completed" and record["text"].startswith("[offline model]")
        sizes.append(stored_bytes(driver))

    state = driver.decoded()
    assert max(sizes) <= BUDGET
    assert state["truncation"]["evictedMessages"] > 0
    assert "capacityError" not in state
    assert state["turnCount"] == 30


def test_the_same_conversation_under_keep_all_grows_past_the_budget_and_is_then_refused() -> None:
    # The control for the test above: this conversation is big enough to need retention.
    client = CountingOfflineClient()
    driver = retention_driver("keep_all", client)
    sizes = []
    refusals = []
    for number, message in enumerate(conversation_messages(30)):
        before, calls_before = driver.state, client.calls
        record = driver.run_turn(f"t{number:03d}", message)
        sizes.append(stored_bytes(driver))
        if record["status"] == "failed":
            refusals.append((before, driver.state, client.calls - calls_before, record))
        else:
            assert "capacityError" not in driver.decoded()  # only a refusal reports, with its numbers

    assert max(sizes) > BUDGET
    assert refusals, "keep_all never refused a turn"
    before, after, model_calls, record = refusals[-1]
    assert record["error"]["code"] == "state_capacity_exceeded"
    assert status_for_code(record["error"]["code"]) == 507
    assert f"its {BUDGET}-byte budget" in record["error"]["message"]
    assert "'auto' or 'follow_compaction'" in record["error"]["message"]
    assert model_calls == 0  # refused before the model ran
    old, new = json.loads(before), json.loads(after)
    for key in ("messages", "session", "turnCount", "retention"):
        assert new.get(key) == old.get(key), key
    # Its own receipt may push an older one out (receipts are held within the budget too); no message goes.
    assert new["truncation"]["evictedMessages"] == 0  # keep_all never deletes a message
    assert new["capacityError"] == record["error"]  # the conversation reports why it is stuck


def test_a_caller_reads_its_answer_or_a_clear_expiry_never_another_answer() -> None:
    # Failure 8: the turn that triggered an eviction still delivers; a turn whose answer retention evicted says so.
    driver = retention_driver("auto", budget=2 * BUDGET, turn_receipts=20)
    answers: dict[str, str] = {}
    for number in range(40):
        turn_id = f"t{number:03d}"
        evicted_before = driver.decoded()["truncation"]["evictedMessages"] if driver.state else 0
        record = driver.run_turn(turn_id, f"My fact{number} is value{number}, stated in a fairly long sentence.")
        answers[turn_id] = record["text"]
        if driver.decoded()["truncation"]["evictedMessages"] > evicted_before:
            evicting_turn = turn_id
    state = driver.decoded()

    number = int(evicting_turn[1:])
    assert delivered(state, evicting_turn)["text"] == answers[evicting_turn]
    assert answers[evicting_turn].startswith(f'[offline model] You said: "My fact{number} is value{number},')
    for turn_id in state["turns"]:
        assert delivered(state, turn_id)["text"] == answers[turn_id]
    assert state["expiredTurns"] and state["truncation"]["expiredAnswers"] > 0
    assert not set(state["expiredTurns"]) & set(state["turns"])


def test_recent_facts_are_recalled_after_older_ones_were_evicted() -> None:
    driver = retention_driver("auto")
    driver.run_turn("t000", "My name is Ada.")
    for number in range(1, 30):
        driver.run_turn(f"t{number:03d}", f"My fact{number} is value{number}, stated in a fairly long sentence.")
    driver.run_turn("t030", "My city is Paris.")
    driver.run_turn("t031", "use get_weather for Paris")

    city = driver.run_turn("t032", "What is my city?")
    name = driver.run_turn("t033", "What is my name?")

    assert driver.decoded()["truncation"]["evictedMessages"] > 40
    assert city["text"] == "[offline model] Your city is Paris."
    # The control: the first fact was evicted, so the model no longer sees it.
    assert name["text"] == "[offline model] I don't know your name yet; nobody told me in this conversation."


def test_set_retention_changes_the_settings_the_next_turn_uses() -> None:
    driver = retention_driver("keep_all")
    for number, message in enumerate(conversation_messages(12)):
        driver.run_turn(f"t{number:03d}", message)
    assert driver.run_turn("t100", "one more")["error"]["code"] == "state_capacity_exceeded"

    (result,) = driver.send(
        ("set_retention", {"changeId": "r1", "retention": {"mode": "auto", "maxStateBytes": BUDGET}})
    )
    record = driver.run_turn("t101", "one more")

    assert json.loads(result["result"])["retention"]["mode"] == "auto"
    assert record["status"] == "completed"
    state = driver.decoded()
    assert state["retention"] == {"mode": "auto", "maxStateBytes": BUDGET, "highWatermark": 0.85, "lowWatermark": 0.7}
    assert state["truncation"]["evictedMessages"] > 0
    assert stored_bytes(driver) <= BUDGET and "capacityError" not in state


def test_set_retention_creates_the_conversation_and_refuses_invalid_settings() -> None:
    driver = retention_driver("auto")

    (bad,) = driver.send(
        ("set_retention", {"changeId": "r1", "retention": {"mode": "sometimes", "maxStateBytes": BUDGET}})
    )
    assert bad["isError"] is True
    assert "retention.mode: Input should be 'keep_all', 'auto' or 'follow_compaction'" in bad["result"]
    assert driver.state is None
    (huge,) = driver.send(("set_retention", {"changeId": "r0", "retention": {"mode": "auto", "maxStateBytes": 10**12}}))
    assert huge["isError"] is True and "must be at most 983040 (960 KiB)" in huge["result"]
    assert driver.state is None

    settings = {"mode": "keep_all", "maxStateBytes": 65536, "lowWatermark": 0.5}
    (good,) = driver.send(("set_retention", {"changeId": "r2", "retention": settings}))
    assert good["isError"] is False
    state = driver.decoded()
    assert state["conversationId"] == "c1" and state["messages"] == []
    assert state["appliedChanges"] == ["r2"]
    assert state["retention"] == {
        "mode": "keep_all",
        "maxStateBytes": 65536,
        "highWatermark": 0.85,
        "lowWatermark": 0.5,
    }
