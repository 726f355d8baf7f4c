"""Every model call through the worker receives what core's own `agent.run` sends over the same messages in process:
one agent and one in-memory session on one side, the conversation entity on a durabletask worker on the other."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from agent_framework import Agent, CompactionProvider, InMemoryHistoryProvider, Message, SlidingWindowStrategy, tool
from apps import make_agent
from chat_clients import ScriptedChatClient

from agent_host._event_loop import AGENT_LOOP

from .workers import agent_client, running_worker

TURNS = [
    "My name is Ada.",
    'call get_weather {"city": "Paris"}',
    "I live in Lyon.",
    'call get_weather {"city": "Kyoto"}',
    "What is my name, and where do I live?",
]
# Core gives every function call content a random `af-call-<uuid>` id: two runs of core differ there too.
_CALL_CONTENT_ID = re.compile(r"af-call-[0-9a-f]{32}")


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def plain(model: ScriptedChatClient) -> Agent:
    return make_agent(model, tools=[get_weather])


def compacted(model: ScriptedChatClient) -> Agent:
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SlidingWindowStrategy(keep_last_groups=3), history_source_id=history.source_id
    )
    return make_agent(model, tools=[get_weather], context_providers=[history, compaction])


def model_inputs(model: ScriptedChatClient) -> list[list[dict[str, Any]]]:
    """What each call received as a model sees it: role, author and contents (host-side annotations never go)."""
    calls = [
        [
            {
                "role": str(message.role),
                "author_name": message.author_name,
                "contents": [content.to_dict(exclude={"raw_representation"}) for content in message.contents],
            }
            for message in call
        ]
        for call in model.calls
    ]
    return json.loads(_CALL_CONTENT_ID.sub("<af-call>", json.dumps(calls)))


@pytest.mark.parametrize("build", [plain, compacted], ids=["no_providers", "sliding_window_compaction"])
def test_every_model_call_matches_core_in_process(build: Callable[[ScriptedChatClient], Agent], hub: str) -> None:
    core_model, hosted_model = ScriptedChatClient(), ScriptedChatClient()
    agent = build(core_model)
    session = agent.create_session(session_id="assistant.c1")
    core_texts = [AGENT_LOOP.run(agent.run(Message("user", [text]), session=session)).text for text in TURNS]

    with running_worker(hub, [build(hosted_model)]), agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        hosted_texts = [conversation.send(text)["text"] for text in TURNS]

    assert hosted_texts == core_texts
    assert len(hosted_model.calls) == len(core_model.calls) > len(TURNS)
    assert model_inputs(hosted_model) == model_inputs(core_model)
