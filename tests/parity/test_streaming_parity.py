"""Parity of streamed and waited turns: the same conversation through the entity twice, once streaming every turn.

Both sides run every turn cold through the entity's JSON batches with the same deterministic model; one asks for a
stream (the run goes through core's streaming run, events to a stream store), the other does not. The stored
conversation (transcript, session, retention, turn records) must be the same, timestamps and core's random
function-call content ids aside, and so must every model call's input, over the compaction configurations the
compaction parity suite uses. Core 1.23 merges call-level compaction summaries into non-streamed responses only:
the call-level cases fail without the host's reconciliation (`_conversation/streamed_run.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    Agent,
    ChatResponse,
    ChatResponseUpdate,
    CompactionProvider,
    InMemoryHistoryProvider,
    Message,
    ResponseStream,
    SlidingWindowStrategy,
    SummarizationStrategy,
    ToolResultCompactionStrategy,
)
from apps import build_app, driver_for
from chat_clients import word_by_word
from parity_fakes import RecordingChatClient
from streams import MemoryTurnStreamStore
from test_compaction_parity import (
    AGENT,
    CONVERSATION,
    STRATEGIES,
    TURNS,
    BuildAgent,
    World,
    model_inputs,
    plain_agent,
    summaries,
    with_compaction,
)

from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._records import record_to_message
from agent_host._streaming.channel import stream_key

_CALL_CONTENT_ID = re.compile(r"af-call-[0-9a-f]{32}")
_TIMES = ("at", "createdAt", "updatedAt")


class StreamingRecordingChatClient(RecordingChatClient):
    """The parity model, able to stream: the same reply, its text word by word, then its usage."""

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse | ResponseStream[ChatResponseUpdate, ChatResponse]:
        response = await super()._inner_get_response(messages=messages, stream=False, options=options, **kwargs)
        return word_by_word(response) if stream else response


class StreamingWorld(World):
    """The parity world, with the model that can stream."""

    def model_client(self) -> RecordingChatClient:
        return StreamingRecordingChatClient(self.model)


def run_turns(
    build: BuildAgent, directory: Path, *, streamed: bool
) -> tuple[StreamingWorld, str, MemoryTurnStreamStore]:
    """Every turn through the entity, cold, streamed or not; the world, the stored state and the stream store."""
    world = StreamingWorld(directory)
    store = MemoryTurnStreamStore()
    stored: str | None = None
    for number, text in enumerate(TURNS):
        CONVERSATION_CACHE.clear()  # as a fresh process starts
        app = build_app(build(world), stream_store=store)
        driver = driver_for(app, AGENT, key=CONVERSATION, state=stored)
        (result,) = driver.send(("run", {"turnId": f"t{number}", "message": text, "stream": streamed}))
        assert not result["isError"], result
        stored = driver.state
    assert stored is not None
    return world, stored, store


def comparable(stored: str) -> Any:
    """A stored state without timestamps and with core's random function-call content ids blanked."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in _TIMES}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return strip(json.loads(_CALL_CONTENT_ID.sub("<af-call>", stored)))


CONFIGURATIONS: dict[str, BuildAgent] = {
    "no_providers": lambda world: plain_agent(world),
    "in_memory_history": lambda world: plain_agent(world, context_providers=[InMemoryHistoryProvider()]),
    **{f"after_{name}": with_compaction(after=strategy) for name, strategy in STRATEGIES.items()},
    **{f"before_{name}": with_compaction(before=strategy) for name, strategy in STRATEGIES.items()},
    "call_level_sliding_window": lambda world: plain_agent(
        world, compaction_strategy=SlidingWindowStrategy(keep_last_groups=3)
    ),
    "call_level_tool_result": lambda world: plain_agent(
        world, compaction_strategy=ToolResultCompactionStrategy(keep_last_tool_call_groups=1)
    ),
    "call_level_summarization": lambda world: plain_agent(
        world, compaction_strategy=SummarizationStrategy(client=world.summarizer_client(), target_count=3, threshold=1)
    ),
    "call_level_tool_result_with_after_summarization": lambda world: call_level_and_providers(world),
}


def call_level_and_providers(world: World) -> Agent:
    """Call-level tool-result compaction and a summarizing after_strategy, both on one agent."""
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=STRATEGIES["summarization"](world), history_source_id=history.source_id
    )
    return plain_agent(
        world,
        context_providers=[history, compaction],
        compaction_strategy=ToolResultCompactionStrategy(keep_last_tool_call_groups=1),
    )


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_a_streamed_conversation_stores_what_a_waited_one_stores(configuration: str, tmp_path: Path) -> None:
    (tmp_path / "waited").mkdir()
    (tmp_path / "streamed").mkdir()
    build = CONFIGURATIONS[configuration]

    waited_world, waited, _ = run_turns(build, tmp_path / "waited", streamed=False)
    streamed_world, streamed, store = run_turns(build, tmp_path / "streamed", streamed=True)

    assert comparable(streamed) == comparable(waited)
    assert model_inputs(streamed_world.model) == model_inputs(waited_world.model)
    assert model_inputs(streamed_world.summarizer) == model_inputs(waited_world.summarizer)
    # The comparison is between streamed runs: every turn wrote its stream.
    entity = f"conversation_{AGENT}"
    assert all(store.events(stream_key(entity, CONVERSATION, f"t{n}")) for n in range(len(TURNS)))


def test_call_level_summaries_reach_the_stored_transcript_of_a_streamed_conversation(tmp_path: Path) -> None:
    # What makes the call-level cases above meaningful: core's streaming run alone would store no summary.
    build = CONFIGURATIONS["call_level_tool_result"]

    _, streamed, _ = run_turns(build, tmp_path, streamed=True)

    state = json.loads(streamed)
    transcript = [record_to_message(record, state["agent"]) for record in state["messages"]]
    assert summaries(transcript)
    assert any(m.additional_properties.get("_excluded") for m in transcript)
