"""`GET .../messages` end to end: what compaction did, readable, and excluded messages only when asked for.

The agent is configured the ordinary core way (in-memory history with `skip_excluded`, a `CompactionProvider`
summarizing with the same offline model); the host makes it durable and the in-memory app (`front_doors`) serves it.
"""

from __future__ import annotations

import pytest
from agent_framework import Agent, CompactionProvider, InMemoryHistoryProvider, SummarizationStrategy, tool
from front_doors import MemoryFunctionApp, memory_app

from agent_host import HostSettings, OfflineChatClient, RetentionSettings

CONVERSATION = "/api/agents/assistant/conversations/long"
MESSAGES = "/api/agents/assistant/conversations/long/messages"
TURNS = "/api/agents/assistant/conversations/long/turns"


@tool
def get_weather(city: str) -> str:
    """The weather in a city (canned)."""
    return f"The weather in {city} is mild."


def compacting_app(retention: RetentionSettings | None = None) -> MemoryFunctionApp:
    client = OfflineChatClient()
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SummarizationStrategy(client=client, target_count=4, threshold=2),
        history_source_id=history.source_id,
    )
    agent = Agent(
        client, "Remember facts.", name="assistant", tools=[get_weather], context_providers=[history, compaction]
    )
    return memory_app(agent, settings=HostSettings(retention=retention) if retention else None)


@pytest.fixture
def host() -> MemoryFunctionApp:
    return compacting_app()


def converse(host: MemoryFunctionApp, *texts: str) -> list[str]:
    answers = []
    for text in texts:
        reply = host.request("POST", TURNS, {"message": text})
        assert reply.status == 200, reply.body
        answers.append(reply.json()["text"])
    return answers


FACTS = ("My name is Grace.", "Please use get_weather for Oslo", "My city is Oslo.", "My pet is a cat.")


def test_messages_leave_out_what_compaction_excluded_and_show_the_summary_with_its_links(
    host: MemoryFunctionApp,
) -> None:
    converse(host, *FACTS, "What is my city?")

    shown = host.request("GET", MESSAGES)
    everything = host.request("GET", f"{MESSAGES}?includeExcluded=true")

    assert shown.status == 200 and everything.status == 200
    visible, stored = shown.json()["messages"], everything.json()["messages"]
    assert [m["excluded"] for m in visible] == [False] * len(visible)
    summary = visible[0]  # the live summary stands where the messages it replaced stood
    assert summary["text"].startswith("[offline model] Summary of 4 earlier messages. The user said: my name is Grace")
    assert summary["text"].endswith("The assistant used get_weather.")
    hidden = [m for m in stored if m["excluded"]]
    assert [m["text"] for m in hidden if m["role"] == "user"] == [
        "My name is Grace.",
        "Please use get_weather for Oslo",
    ]
    assert {m["excludeReason"] for m in hidden} == {"summarized"}
    # Summaries chain: the first summary was itself summarized into the live one, which every link leads to.
    summaries = {m["messageId"]: m for m in stored if "summaryOf" in m}
    assert len(summaries) == 2 and summary["messageId"] in summaries
    for summary_id, linked in summaries.items():
        assert linked["summaryOf"] == [m["messageId"] for m in hidden if m["summarizedBy"] == summary_id]
    assert [m["group"]["kind"] for m in hidden] == [
        "assistant_text",
        "user",
        "assistant_text",
        "user",
        "tool_call",
        "tool_call",
        "assistant_text",
    ]
    assert hidden[1]["annotations"]["_group"]["_summarized_by_summary_id"] == hidden[1]["summarizedBy"]
    assert [m["messageId"] for m in stored if not m["excluded"]] == [m["messageId"] for m in visible]
    assert len(visible) == 7 and len(stored) == 14


def test_recall_still_works_once_the_fact_was_summarized(host: MemoryFunctionApp) -> None:
    converse(host, *FACTS, "What is my city?")

    (answer,) = converse(host, "What is my name?")

    stored = host.request("GET", f"{MESSAGES}?includeExcluded=true").json()["messages"]
    assert next(m for m in stored if m["text"] == "My name is Grace.")["excluded"] is True
    assert answer == "[offline model] Your name is Grace."


def test_messages_before_any_compaction_carry_no_compaction_fields(host: MemoryFunctionApp) -> None:
    converse(host, "My name is Grace.")

    (first, second) = host.request("GET", MESSAGES).json()["messages"]

    assert first["text"] == "My name is Grace." and first["excluded"] is False
    assert not {"excludeReason", "summaryOf", "summarizedBy", "group"} & (first.keys() | second.keys())


def test_include_excluded_must_be_true_or_false(host: MemoryFunctionApp) -> None:
    converse(host, "My name is Grace.")

    reply = host.request("GET", f"{MESSAGES}?includeExcluded=maybe")

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "invalid_query"
    assert "includeExcluded: Input should be a valid boolean" in reply.json()["error"]["message"]
    assert "(got 'maybe')" in reply.json()["error"]["message"]


def test_after_eviction_every_summary_link_names_a_stored_message_and_the_summary_still_answers() -> None:
    # A small budget: retention deletes under pressure while compaction keeps summarizing (architecture.md, 18).
    running = compacting_app(RetentionSettings(max_state_bytes=8192))
    filler = " ".join(["and the durable entity keeps this conversation within its budget"] * 2)
    converse(running, "My name is Grace.", *(f"My code {chr(97 + n)} is {n}, {filler}." for n in range(20)))
    (answer,) = converse(running, "What is my name?")

    conversation = running.request("GET", CONVERSATION).json()
    stored = running.request("GET", f"{MESSAGES}?includeExcluded=true").json()["messages"]

    assert conversation["truncation"]["evictedMessages"] > 0
    assert "My name is Grace." not in [m["text"] for m in stored]  # deleted; a summary stands for it
    ids = {m["messageId"] for m in stored}
    links = [m["summarizedBy"] for m in stored if "summarizedBy" in m]
    assert links and set(links) <= ids
    assert [m["messageId"] for m in stored if m["excluded"] and m.get("summarizedBy") not in ids] == []
    assert answer == "[offline model] Your name is Grace."
