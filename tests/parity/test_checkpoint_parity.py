"""Parity of checkpointed turns: a conversation whose every turn is interrupted at every step stores what an
uninterrupted one stores.

Each turn runs in a new process (cold, new objects) that dies right after the first step it journals, then again,
until a run finds the whole turn in its journal and commits; so every turn is cut after each of its model calls
and tool results, and its re-runs replay what the journal holds. Over the configurations of the streaming parity
suite (compaction before and after, call-level strategies and summaries, tools), waited and streamed, the stored
conversation (transcript, session, retention, turn records) and every model call's input must be the same as an
uninterrupted run's: no model call is made twice. Call-level summarizers are not journaled: a re-run asks them
again, and their (deterministic) answers are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from apps import build_app, driver_for
from streams import MemoryTurnStreamStore
from test_compaction_parity import AGENT, CONVERSATION, TURNS, BuildAgent, model_inputs
from test_streaming_parity import CONFIGURATIONS, StreamingWorld, comparable, run_turns

from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._streaming.channel import StreamEvent
from agent_host._streaming.journal import JOURNAL_SUFFIX, MODEL_RESPONSE, TOOL_RESULT

STEPS = (MODEL_RESPONSE, TOOL_RESULT)


class Crash(BaseException):
    """The process dies here (neither core nor the entity catches it)."""


class DyingAfterFirstJournalWrite(MemoryTurnStreamStore):
    """The shared store as one process sees it: the process dies right after the first step it journals (a model
    response or a tool result; a crash while a tool runs is `test_checkpointed_turns`')."""

    def __init__(self, shared: MemoryTurnStreamStore) -> None:
        self.shared = shared
        self.wrote = False

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        await self.shared.append(stream, events)
        if stream.endswith(JOURNAL_SUFFIX) and any(event.event in STEPS for event in events):
            self.wrote = True
            raise Crash

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        return await self.shared.read(stream, after, limit)

    async def last_id(self, stream: str) -> int:
        return await self.shared.last_id(stream)

    async def delete(self, streams: Sequence[str]) -> None:
        await self.shared.delete(streams)


def run_interrupted(build: BuildAgent, directory: Path, *, streamed: bool) -> tuple[StreamingWorld, str, int]:
    """Every turn cut after each step and re-run cold until it commits; the world, the stored state, the crashes."""
    world = StreamingWorld(directory)
    shared = MemoryTurnStreamStore()
    stored: str | None = None
    crashes = 0
    for number, text in enumerate(TURNS):
        while True:
            CONVERSATION_CACHE.clear()  # a fresh process: nothing decoded survives
            process = DyingAfterFirstJournalWrite(shared)
            driver = driver_for(build_app(build(world), stream_store=process), AGENT, key=CONVERSATION, state=stored)
            try:
                (result,) = driver.send(("run", {"turnId": f"t{number}", "message": text, "stream": streamed}))
            except Crash:
                crashes += 1
                continue
            assert not process.wrote and not result["isError"], result
            stored = driver.state
            break
    assert stored is not None
    return world, stored, crashes


@pytest.mark.parametrize("streamed", [False, True], ids=["waited", "streamed"])
@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_a_conversation_interrupted_at_every_step_stores_what_an_uninterrupted_one_stores(
    configuration: str, streamed: bool, tmp_path: Path
) -> None:
    (tmp_path / "whole").mkdir()
    (tmp_path / "cut").mkdir()
    build = CONFIGURATIONS[configuration]

    whole_world, whole, _ = run_turns(build, tmp_path / "whole", streamed=streamed)
    cut_world, cut, crashes = run_interrupted(build, tmp_path / "cut", streamed=streamed)

    assert comparable(cut) == comparable(whole)
    assert model_inputs(cut_world.model) == model_inputs(whole_world.model)  # no model call made twice
    # Every model call and every tool result was a cut, once each: the proof covers each step of each turn.
    tool_results = sum(1 for call in whole_world.model.calls if call.messages and call.messages[-1]["role"] == "tool")
    assert crashes == len(whole_world.model.calls) + tool_results
