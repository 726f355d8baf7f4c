"""A turn's journal on every turn stream store (SQLite, Azure Tables on Azurite, Redis): what a re-run of the turn
reads back is what its first run wrote, whole, and deleting the turn's journal leaves its stream alone."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_host._streaming.channel import TURN_STARTED, StreamEvent, TurnStreamStore
from agent_host._streaming.journal import MODEL_RESPONSE, TOOL_RESULT, TOOL_STARTED, TurnJournal, journal_key


async def first_run(store: TurnStreamStore, key: str, response: dict[str, Any]) -> int:
    journal = TurnJournal(store, key)
    assert (await journal.entries()).last_id == 0
    await journal.write(MODEL_RESPONSE, {"call": 1, "response": response})
    # Concurrent tool calls: ids are taken in order, so none of the writes is skipped as a repeat.
    await asyncio.gather(
        journal.write(TOOL_STARTED, {"callId": "a", "afterCall": 1, "tool": "book"}),
        journal.write(TOOL_STARTED, {"callId": "b", "afterCall": 1, "tool": "book"}),
    )
    await journal.write(TOOL_RESULT, {"callId": "a", "afterCall": 1, "contents": [{"type": "text", "text": "ok"}]})
    return journal.writes


def test_a_re_run_reads_back_every_step_its_first_run_journaled(store: TurnStreamStore, stream: str) -> None:
    key = journal_key(stream)
    # Larger than one Azure Table property (64 KiB): a journaled model response can be.
    response = {"messages": [{"role": "assistant", "contents": [{"type": "text", "text": "x" * 200_000}]}]}

    writes = asyncio.run(first_run(store, key, response))
    entries = asyncio.run(TurnJournal(store, key).entries())

    assert writes == 4  # one store write per step
    assert entries.responses == {1: {"call": 1, "response": response}}
    assert entries.started == {"1/a", "1/b"}
    assert list(entries.results) == ["1/a"] and entries.last_id == 4


def test_deleting_a_journal_leaves_its_turns_stream(store: TurnStreamStore, stream: str) -> None:
    started = StreamEvent(1, TURN_STARTED, {"turnId": "t1", "attempt": 1})
    asyncio.run(store.append(stream, [started]))
    asyncio.run(first_run(store, journal_key(stream), {"messages": []}))

    asyncio.run(store.delete([journal_key(stream)]))

    assert asyncio.run(TurnJournal(store, journal_key(stream)).entries()).last_id == 0
    assert asyncio.run(store.read(stream)) == [started]
