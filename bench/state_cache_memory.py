"""The memory the state cache holds: its estimate against tracemalloc, and a worker's RSS under each bound.

`python -m bench.state_cache_memory [--quick] [--output FILE]`

1. **Per conversation.** A conversation of about 600 kB (its last 50 turns real, older history copies of them) takes
   two turns through the entity function; tracemalloc counts what the cache then holds for it (everything freed when
   the cache is cleared), beside the cache's own estimate (`state_cache.estimated_bytes`). Four kinds of history:
   the benchmarks' short messages, long messages, tool calls, and tool calls compacted by a sliding window.
2. **A worker's RSS.** In a fresh process per bound (`AGENT_HOST_STATE_CACHE_MB`), 200 conversations of about
   600 kB (short messages, the heaviest kind per byte) each take a turn, round-robin, through the entity function.
   The state strings are kept compressed between turns, because on Azure the Functions host holds them, not the
   Python worker. Reported: RSS before the first turn, peak RSS (VmHWM) after each round, and what the cache holds.

What it cannot show: the Functions host's own memory beside the worker on a Flex Consumption instance, and the
memory of turns running at once (each holds its conversation's working copy while it runs).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from agent_framework import Agent, CompactionProvider, InMemoryHistoryProvider, SlidingWindowStrategy

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient, RetentionSettings
from agent_host._conversation.state_cache import CONVERSATION_CACHE, MB, estimated_bytes

from .feature_figures import state_cache_estimate, state_cache_flex, state_cache_rss
from .report import machine
from .standalone import quick_parser, write_results
from .workload import ZeroLatencyChatClient, entity_batch, user_message

RESULTS_FILE = Path(__file__).resolve().parent / "results" / "state_cache_memory.json"
AGENT = "assistant"
ENTITY = f"conversation_{AGENT}"
# Conversations keep every message whatever their size: retention is not what this measures.
KEEP_ALL = HostSettings(retention=RetentionSettings(mode="keep_all", max_state_bytes=64 * MB))
SEED_TURNS = 50


@dataclass(frozen=True)
class Plan:
    """How much to measure: the conversations' size, how many the worker touches, how often, under which bounds."""

    state_chars: int
    conversations: int
    rounds: int
    bounds_mb: tuple[int, ...]


# The bound the deployment sets for each Flex Consumption instance size (infra/modules/functionapp.bicep).
FLEX_CONSUMPTION_CACHE_MB = {512: 128, 2048: 768, 4096: 1536}
FULL = Plan(state_chars=600_000, conversations=200, rounds=2, bounds_mb=(0, *FLEX_CONSUMPTION_CACHE_MB.values()))
QUICK = Plan(state_chars=60_000, conversations=6, rounds=2, bounds_mb=(0, 4))


def lookup_order(order_id: Annotated[str, "The order to look up."]) -> str:
    """Look up an order."""
    return f"Order {order_id} ships tomorrow from the warehouse nearest to the delivery address on file."


def _plain_agent() -> Agent:
    return Agent(ZeroLatencyChatClient(), "You are the benchmark's agent.", name=AGENT)


def _tool_agent() -> Agent:
    return Agent(OfflineChatClient(), "You look up orders.", name=AGENT, tools=[lookup_order])


def _compacting_agent() -> Agent:
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SlidingWindowStrategy(keep_last_groups=4), history_source_id=history.source_id
    )
    return Agent(
        OfflineChatClient(),
        "You look up orders.",
        name=AGENT,
        tools=[lookup_order],
        context_providers=[history, compaction],
    )


def _short(turn: int) -> str:
    return user_message(turn)


def _long(turn: int) -> str:
    return (user_message(turn) + " ") * 28


def _tool_call(turn: int) -> str:
    return f"use lookup_order order_id=A{turn}" if turn % 2 else f"My city is Lyon number {turn}."


# Each kind of history: its name, the agent that writes it, and the message of each turn.
SHAPES: tuple[tuple[str, Callable[[], Agent], Callable[[int], str]], ...] = (
    ("short messages (70 and 200 characters)", _plain_agent, _short),
    ("long messages (2,000 and 200 characters)", _plain_agent, _long),
    ("tool calls", _tool_agent, _tool_call),
    ("tool calls, compacted", _compacting_agent, _tool_call),
)


class Conversations:
    """One app's entity function and the turns it runs, each checked to have completed."""

    def __init__(self, agent: Agent, settings: HostSettings = KEEP_ALL) -> None:
        app = AgentFunctionApp(agents=[agent], settings=settings)
        self.function = next(f for f in app.get_functions() if f.get_function_name() == ENTITY).get_user_function()

    def turn(self, key: str, state: str | None, turn_id: str, message: str) -> str:
        """Run one turn on `state`; the new state string."""
        output = json.loads(
            self.function(entity_batch(ENTITY, key, state, [("run", {"turnId": turn_id, "message": message})]))
        )
        (result,) = output["results"]
        payload = json.loads(result["result"]) if isinstance(result["result"], str) else result["result"]
        if result["isError"] or payload.get("status") != "completed":
            raise RuntimeError(f"The entity did not complete the turn: {payload}")
        return str(output["entityState"])


def grown_state(conversations: Conversations, message: Callable[[int], str], chars: int, key: str) -> str:
    """A conversation of at least `chars` characters: `SEED_TURNS` real turns, older history copied from them."""
    state: str | None = None
    for turn in range(1, SEED_TURNS + 1):
        state = conversations.turn(key, state, f"t{turn}", message(turn))
    assert state is not None
    decoded = json.loads(state)
    seed = decoded["messages"]
    older: list[dict[str, Any]] = []
    size = len(state)
    while size < chars:
        copy_number = len(older) // len(seed) + 1
        for record in seed:
            older.append({**record, "id": f"old{copy_number}-{record['id']}"})
            size += len(json.dumps(older[-1], separators=(",", ":"), ensure_ascii=False)) + 1
    decoded["messages"] = [*older, *seed]
    return json.dumps(decoded, separators=(",", ":"), ensure_ascii=False)


def measure_shape(name: str, agent: Callable[[], Agent], message: Callable[[int], str], chars: int) -> dict[str, Any]:
    """What the cache holds for one conversation of this kind after two turns, measured and estimated."""
    conversations = Conversations(agent())
    state = grown_state(conversations, message, chars, "measured")
    CONVERSATION_CACHE.clear()
    gc.collect()
    tracemalloc.start()
    try:
        for turn in (SEED_TURNS + 1, SEED_TURNS + 2):
            state = conversations.turn("measured", state, f"t{turn}", message(turn))
        gc.collect()
        holding = tracemalloc.get_traced_memory()[0]
        estimate = CONVERSATION_CACHE.held_bytes
        CONVERSATION_CACHE.clear()
        gc.collect()
        measured = holding - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    decoded = json.loads(state)
    assert estimate == estimated_bytes(state, decoded)
    return {
        "shape": name,
        "state_chars": len(state),
        "messages": len(decoded["messages"]),
        "measured_bytes": measured,
        "estimated_bytes": estimate,
        "estimated_over_measured": estimate / measured,
    }


def peak_rss_mb() -> float:
    """The process's peak resident set so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def worker_rss(bound_mb: int, plan: Plan) -> dict[str, Any]:
    """In this process: `plan.conversations` conversations taking turns round-robin under a cache bound."""
    conversations = Conversations(_plain_agent(), HostSettings(retention=KEEP_ALL.retention, state_cache_mb=bound_mb))
    seed = json.loads(grown_state(conversations, _short, plan.state_chars, "seed"))
    stored: list[bytes] = []
    for number in range(plan.conversations):
        seed["conversationId"] = f"c{number}"
        stored.append(zlib.compress(json.dumps(seed, separators=(",", ":"), ensure_ascii=False).encode()))
    del seed
    CONVERSATION_CACHE.clear()
    gc.collect()
    before = peak_rss_mb()
    rounds: list[dict[str, Any]] = []
    for round_number in range(1, plan.rounds + 1):
        for number, compressed in enumerate(stored):
            written = conversations.turn(f"c{number}", zlib.decompress(compressed).decode(), f"r{round_number}", "Hi.")
            stored[number] = zlib.compress(written.encode())
        rounds.append(
            {
                "peak_rss_mb": peak_rss_mb(),
                "cached": len(CONVERSATION_CACHE),
                "estimated_mb": CONVERSATION_CACHE.held_bytes / MB,
            }
        )
    return {
        "bound_mb": bound_mb,
        "state_chars": len(zlib.decompress(stored[0])),
        "rss_before_mb": before,
        "rounds": rounds,
    }


def measure_rss(plan: Plan) -> list[dict[str, Any]]:
    """`worker_rss` for each bound, each in a fresh process (RSS never shrinks back within one)."""
    results = []
    for bound in plan.bounds_mb:
        print(f"worker RSS with a {bound} MB cache...", file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "bench.state_cache_memory", "--worker", str(bound), "--plan", _plan_json(plan)]
        completed = subprocess.run(command, capture_output=True, text=True, check=True, cwd=Path(__file__).parents[1])
        results.append(json.loads(completed.stdout))
    return results


def _plan_json(plan: Plan) -> str:
    return json.dumps([plan.state_chars, plan.conversations, plan.rounds, list(plan.bounds_mb)])


def table(figures: dict[str, Any]) -> str:
    """The two tables, as printed and as docs/scaling.md shows them."""
    return "\n".join([*state_cache_estimate(figures), "", *state_cache_rss(figures), "", *state_cache_flex(figures)])


def run(plan: Plan) -> dict[str, Any]:
    """Everything this benchmark reports, with the machine it ran on."""
    started_on = machine()
    shapes = []
    for name, agent, message in SHAPES:
        print(f"what the cache holds: {name}...", file=sys.stderr, flush=True)
        shapes.append(measure_shape(name, agent, message, plan.state_chars))
    return {
        "quick": plan is QUICK,
        "machine": started_on,
        "plan": {"state_chars": plan.state_chars, "conversations": plan.conversations, "rounds": plan.rounds},
        "shapes": shapes,
        "workers": measure_rss(plan),
        "flex_consumption_cache_mb": {str(memory): bound for memory, bound in FLEX_CONSUMPTION_CACHE_MB.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the tables, write the JSON results (or, with --worker, one worker's figures to stdout)."""
    parser = quick_parser(
        "python -m bench.state_cache_memory",
        (__doc__ or "").splitlines()[0],
        "small conversations and two bounds: shows that it works",
        RESULTS_FILE,
    )
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        chars, count, rounds, bounds = json.loads(args.plan)
        print(json.dumps(worker_rss(args.worker, Plan(chars, count, rounds, tuple(bounds)))))
        return 0
    figures = run(QUICK if args.quick else FULL)
    print(table(figures))
    write_results(args.output, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
