"""The offline model: labelled, deterministic, answers from what it is sent, and calls named tools."""

from __future__ import annotations

import asyncio

from agent_framework import Agent, Message, tool

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
