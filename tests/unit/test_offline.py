"""The offline model: labelled, deterministic, answers from what it is sent, and calls named tools."""

from __future__ import annotations

import asyncio

from agent_framework import Agent, Content, Message, tool

from agent_host import OfflineChatClient


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


def ask(messages: list[str], tools=None) -> str:
    client = OfflineChatClient()
    history = [Message("user" if i % 2 == 0 else "assistant", [text]) for i, text in enumerate(messages)]
    agent = Agent(client, "test", tools=tools or [])
    return asyncio.run(agent.run(history)).text


def test_recall_needs_the_earlier_message() -> None:
    assert ask(["My name is Ada.", "ok", "What is my name?"]) == "[offline model] Your name is Ada."
    assert "don't know your name" in ask(["What is my name?"])


def test_facts_joined_by_and_are_separate() -> None:
    assert (
        ask(["My name is Ada and my city is Oslo.", "ok", "What is my city?"]) == "[offline model] Your city is Oslo."
    )


def test_naming_a_tool_calls_it() -> None:
    assert (
        ask(["please use get_weather for Rome"], tools=[get_weather])
        == "[offline model] The tool returned: Sunny in Rome"
    )


def test_replies_are_deterministic() -> None:
    assert ask(["hello there"]) == ask(["hello there"])


def test_a_summarization_request_is_answered_with_the_facts_and_tools_it_finds() -> None:
    from agent_framework import SummarizationStrategy, annotate_message_groups

    client = OfflineChatClient()
    transcript = [
        Message("user", ["My name is Grace and my city is Oslo."]),
        Message("assistant", ["[offline model] Noted."]),
        Message("assistant", [Content.from_function_call("c1", "get_weather", arguments='{"city": "Oslo"}')]),
        Message("tool", [Content.from_function_result("c1", result="mild")]),
        Message("user", ["My pet is a cat."]),
        Message("assistant", ["[offline model] Noted."]),
    ]
    messages = list(transcript)
    annotate_message_groups(messages)

    asyncio.run(SummarizationStrategy(client=client, target_count=2, threshold=0)(messages))

    summary = messages[0]
    assert summary.text == (
        "[offline model] Summary of 4 earlier messages. The user said: my name is Grace; my city is Oslo. "
        "The assistant used get_weather."
    )


def test_facts_in_an_earlier_summary_are_recalled() -> None:
    client = OfflineChatClient()
    history = [
        Message("assistant", ["[offline model] Summary of 4 earlier messages. The user said: my name is Grace."]),
        Message("user", ["What is my name?"]),
    ]

    answer = asyncio.run(Agent(client, "test").run(history)).text

    assert answer == "[offline model] Your name is Grace."
