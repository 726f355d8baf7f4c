"""`python -m bench.checkpoint_cost`: what checkpointed turns cost a step, and what replaying a journal costs.

Turns of a tool-calling agent (an instant model that calls a tool N times, one call per model call, then answers)
go through the entity function in the host's JSON batch format, each in a conversation of its own, with
checkpoints on and off over the same turn stream store:

1. Store writes: the journal writes a turn makes, per model call and per tool call, counted at the store.
2. Milliseconds a step: the wall time checkpoints add to a turn, divided by its steps (model calls and tool calls),
   median of interleaved rounds; on the local SQLite store, and on Azure Tables when `--azure` names a Table
   service (Azurite's connection string, for example).
3. Replay: the wall time of the same turn run again from a complete journal (a redelivery after a lost commit),
   per step, against running it.

Prints the tables and writes the figures to `bench/results/checkpoint_cost.json`. `--quick` measures little.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from agent_framework import Agent, BaseChatClient, ChatResponse, Content, Message, tool
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

from agent_host import AgentFunctionApp, HostSettings, StreamEvent, TurnStreamStore
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._streaming.journal import JOURNAL_SUFFIX, MODEL_RESPONSE, TOOL_RESULT, TOOL_STARTED
from agent_host._streaming.sqlite_store import SqliteStreamStore

from .feature_figures import RESULTS_DIR
from .report import machine
from .standalone import quick_parser, write_results
from .workload import entity_batch

AGENT = "bench"
ENTITY = f"conversation_{AGENT}"


class ToolLoopChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """An instant model: asked `steps N`, it calls the `step` tool until N results are in, then answers."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "bench.tool_loop"

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        wanted = int(next(m.text for m in messages if m.role == "user").split()[1])
        done = sum(1 for message in messages for content in message.contents if content.type == "function_result")
        usage = {"input_token_count": len(messages), "output_token_count": 1}
        if done < wanted:
            call = Content.from_function_call(f"call-{done}", "step", arguments={"number": done})
            return ChatResponse(messages=[Message("assistant", [call])], usage_details=usage)
        return ChatResponse(messages=[Message("assistant", [f"done after {done} steps"])], usage_details=usage)


@tool
def step(number: int) -> str:
    """One step of work."""
    return f"step {number} done"


class CountingStore:
    """A turn stream store that counts the journal writes (appends and deletes) made through it."""

    def __init__(self, inner: TurnStreamStore) -> None:
        self.inner = inner
        self.journal_writes = 0  # appends to a journal
        self.journal_appends: Counter[str] = Counter()  # the entries they wrote, by kind
        self.journal_deletes = 0

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        if stream.endswith(JOURNAL_SUFFIX):
            self.journal_writes += 1
            self.journal_appends.update(event.event for event in events)
        await self.inner.append(stream, events)

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        return await self.inner.read(stream, after, limit)

    async def last_id(self, stream: str) -> int:
        return await self.inner.last_id(stream)

    async def delete(self, streams: Sequence[str]) -> None:
        self.journal_deletes += any(stream.endswith(JOURNAL_SUFFIX) for stream in streams)
        await self.inner.delete(streams)


def entity_function(store: TurnStreamStore, *, checkpoints: bool) -> Callable[[str], str]:
    """The entity function of an app whose agent loops over the tool, over `store`."""
    agent = Agent(ToolLoopChatClient(), "Run the steps.", name=AGENT, tools=[step])
    app = AgentFunctionApp(agents=[agent], settings=HostSettings(checkpoints=checkpoints), stream_store=store)
    function = next(f for f in app.get_functions() if f.get_function_name() == ENTITY)
    return function.get_user_function()  # type: ignore[no-any-return]


@dataclass
class Writes:
    """Journal writes of one turn of `tools` tool calls."""

    tools: int
    model_calls: int
    appends: int
    deletes_next_operation: int
    per_model_call: float
    per_tool_call: float


@dataclass
class StepCost:
    """What checkpoints add to a turn's wall time, a step, on one store."""

    store: str
    tools: int
    steps: int
    off_ms: float
    on_ms: float
    added_ms_per_step: float
    replay_ms: float
    replay_ms_per_step: float


def run_turn(function: Callable[[str], str], key: str, tools: int, state: str | None = None) -> float:
    """Run one turn in conversation `key`; its wall time in milliseconds."""
    CONVERSATION_CACHE.clear()
    batch = entity_batch(ENTITY, key, state, [("run", {"turnId": "t1", "message": f"steps {tools}"})])
    started = time.perf_counter()
    function(batch)
    return (time.perf_counter() - started) * 1000


def measure_writes(tools: int) -> Writes:
    """Count the journal writes of one turn, and the delete the conversation's next operation makes."""
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStreamStore(Path(directory) / "streams.sqlite3")
        counting = CountingStore(store)
        function = entity_function(counting, checkpoints=True)
        CONVERSATION_CACHE.clear()
        first = entity_batch(ENTITY, "c", None, [("run", {"turnId": "t1", "message": f"steps {tools}"})])
        output = function(first)
        appends, writes = counting.journal_appends.copy(), counting.journal_writes
        state = json.loads(output)["entityState"]
        function(entity_batch(ENTITY, "c", state, [("run", {"turnId": "t2", "message": "steps 0"})]))
        store.close()
    model_calls = tools + 1
    return Writes(
        tools=tools,
        model_calls=model_calls,
        appends=writes,
        deletes_next_operation=counting.journal_deletes,
        per_model_call=round(appends[MODEL_RESPONSE] / model_calls, 2),
        per_tool_call=round((appends[TOOL_STARTED] + appends[TOOL_RESULT]) / tools, 2) if tools else 0.0,
    )


def measure_step_cost(name: str, store: TurnStreamStore, tools: int, rounds: int) -> StepCost:
    """Median wall time of a turn with checkpoints off and on (interleaved rounds), and of its replay."""
    on, off = entity_function(store, checkpoints=True), entity_function(store, checkpoints=False)
    timings: dict[str, list[float]] = {"on": [], "off": [], "replay": []}
    for number in range(rounds + 1):  # the first round warms up
        off_ms = run_turn(off, f"off-{number}-{time.time_ns()}", tools)
        key = f"on-{number}-{time.time_ns()}"
        on_ms = run_turn(on, key, tools)
        # The same turn delivered again with its commit lost: the journal is complete, nothing runs again.
        replay_ms = run_turn(on, key, tools)
        if number:
            timings["off"].append(off_ms)
            timings["on"].append(on_ms)
            timings["replay"].append(replay_ms)
    steps = 2 * tools + 1
    median = {case: statistics.median(values) for case, values in timings.items()}
    return StepCost(
        store=name,
        tools=tools,
        steps=steps,
        off_ms=round(median["off"], 2),
        on_ms=round(median["on"], 2),
        added_ms_per_step=round((median["on"] - median["off"]) / steps, 3),
        replay_ms=round(median["replay"], 2),
        replay_ms_per_step=round(median["replay"] / steps, 3),
    )


def stores(directory: Path, azure: str | None) -> list[tuple[str, TurnStreamStore]]:
    """The stores to measure on: the local SQLite file, and Azure Tables when a connection string is given."""
    chosen: list[tuple[str, TurnStreamStore]] = [("sqlite", SqliteStreamStore(directory / "streams.sqlite3"))]
    if azure:
        from agent_host._streaming.azure_table_store import AzureTableStreamStore
        from agent_host._streaming.host_storage import HostStorageConnection

        connection = HostStorageConnection(connection_string=azure)
        chosen.append(("azure_table", AzureTableStreamStore(connection, table_name="benchCheckpoints")))
    return chosen


def main(argv: list[str] | None = None) -> int:
    """Measure and print; write the figures."""
    parser = quick_parser(
        "python -m bench.checkpoint_cost",
        __doc__.splitlines()[0],
        "measure a little, to see that it still works",
        RESULTS_DIR / "checkpoint_cost.json",
    )
    parser.add_argument("--azure", help="an Azure Table service's connection string (Azurite's, for example)")
    args = parser.parse_args(argv)
    tool_counts, rounds = ((1, 5), 3) if args.quick else ((1, 5, 20), 30)

    writes = [measure_writes(tools) for tools in tool_counts]
    costs: list[StepCost] = []
    with tempfile.TemporaryDirectory() as directory:
        for name, store in stores(Path(directory), args.azure):
            costs += [measure_step_cost(name, store, tools, rounds) for tools in tool_counts]
            close = getattr(store, "close", None)
            if close is not None:
                close()

    print("Journal writes of one turn (one model call more than tool calls)")
    print("| tool calls | model calls | journal appends | per model call | per tool call | deletes, next op |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in writes:
        print(
            f"| {row.tools} | {row.model_calls} | {row.appends} | {row.per_model_call} | {row.per_tool_call} "
            f"| {row.deletes_next_operation} |"
        )
    print(f"\nWall time a turn, checkpoints off and on, and its replay (median of {rounds} rounds)")
    print("| store | tool calls | steps | off ms | on ms | added ms a step | replay ms | replay ms a step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for cost in costs:
        print(
            f"| {cost.store} | {cost.tools} | {cost.steps} | {cost.off_ms} | {cost.on_ms} | {cost.added_ms_per_step} "
            f"| {cost.replay_ms} | {cost.replay_ms_per_step} |"
        )
    figures = {
        "machine": machine(),
        "rounds": rounds,
        "writes": [asdict(row) for row in writes],
        "steps": [asdict(cost) for cost in costs],
    }
    write_results(args.output, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
