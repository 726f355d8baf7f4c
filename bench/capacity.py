"""Turns a second one process serves through the local host, at 1, 20 and 100 conversations at once, offline model.

`python -m bench.capacity [--quick] [--output FILE]`

Each conversation is one client thread posting waited turns (`POST .../turns` with `"wait": true`) one after another,
as a person or a program taking turns would; all conversations run at once. The offline model answers without a
network, so the figures are the host's: the HTTP functions, the signal, the entity's turn and commit, the polling
that reads the answer back, and (with expiry on) the start of each conversation's expiry orchestration. Everything
runs in this one process on loopback, so the client threads take a share of the same CPUs. The same load runs with
`AGENT_HOST_CONVERSATION_TTL` at its default and with it off, which is what starting expiry with every turn costs.
What cannot be measured here: anything of Azure (a Flex Consumption instance, a storage backend's latency, the
Azure Storage provider's 45 KB blob offload of larger states); docs/scaling.md says what those depend on.
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import azure.functions as func
from agent_framework import Agent

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient
from agent_host._expiry_settings import DEFAULT_CONVERSATION_TTL_SECONDS, describe_ttl
from agent_host._local_host import LocalHost

from .report import machine
from .served import ServedApp, waited_turn
from .standalone import quick_parser, write_results
from .workload import percentile

RESULTS_FILE = Path(__file__).resolve().parent / "results" / "capacity.json"
AGENT = "assistant"
OFFLINE_PREFIX = "[offline model]"


@dataclass(frozen=True)
class Plan:
    """How much to measure: conversations at once, turns each, and how often each load is repeated."""

    concurrency: tuple[int, ...]
    turns_each: dict[int, int]
    repeats: int


FULL = Plan(concurrency=(1, 20, 100), turns_each={1: 200, 20: 30, 100: 6}, repeats=5)
QUICK = Plan(concurrency=(1, 3), turns_each={1: 3, 3: 2}, repeats=1)


@dataclass
class LoadFigures:
    """One load (conversations at once, with or without expiry): the median run of its repeats."""

    conversations: int
    expiry: str
    turns: int
    turns_per_second: float
    p50_ms: float
    p95_ms: float
    cpu_ms_per_turn: float
    expiry_orchestrations: int
    # Every run's turns a second, lowest first: how far one run of the same load lands from another.
    runs_turns_per_second: list[float] = field(default_factory=list)


def expiry_orchestrations(host: LocalHost) -> int:
    """How many expiry orchestrations the host keeps (one per conversation when expiry is on)."""
    with host.store.reading("count expiry orchestrations") as conn:
        row = conn.execute("SELECT COUNT(*) FROM orchestrations WHERE name = 'expiry_conversation'").fetchone()
    return int(row[0])


def offline_turn(address: tuple[str, int], conversation: str, turn: int) -> float:
    """One waited turn; its wall time in milliseconds, once the offline model answered it."""
    return waited_turn(
        address,
        AGENT,
        conversation,
        f"My fact{turn} is value{turn}.",
        answered=lambda text: text.startswith(OFFLINE_PREFIX),
    )


def run_load(host: ServedApp, conversations: int, turns_each: int, label: str) -> tuple[float, list[float], float]:
    """All conversations at once, each taking its turns in order: (elapsed seconds, latencies, CPU seconds)."""

    def converse(index: int) -> list[float]:
        return [offline_turn(host.address, f"{label}-{index}", turn) for turn in range(1, turns_each + 1)]

    cpu, started = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(max_workers=conversations) as pool:
        latencies = [ms for result in pool.map(converse, range(conversations)) for ms in result]
    return time.perf_counter() - started, latencies, time.process_time() - cpu


def measure_load(conversations: int, turns_each: int, ttl_seconds: float) -> LoadFigures:
    """One run of one load on a fresh host."""
    with tempfile.TemporaryDirectory(prefix="agent-host-capacity-") as state_dir:
        app = AgentFunctionApp(
            agents=[Agent(OfflineChatClient(), name=AGENT)],
            settings=HostSettings(conversation_ttl_seconds=ttl_seconds),
            http_auth_level=func.AuthLevel.ANONYMOUS,
        )
        host = ServedApp(app, Path(state_dir), name="bench-capacity")
        try:
            offline_turn(host.address, "warm-up", 1)
            elapsed, latencies, cpu = run_load(host, conversations, turns_each, "load")
            watched = expiry_orchestrations(host.host)
        finally:
            host.stop()
    turns = len(latencies)
    return LoadFigures(
        conversations=conversations,
        expiry=describe_ttl(ttl_seconds),
        turns=turns,
        turns_per_second=turns / elapsed,
        p50_ms=percentile(latencies, 0.50),
        p95_ms=percentile(latencies, 0.95),
        cpu_ms_per_turn=cpu * 1000 / turns,
        expiry_orchestrations=watched,
    )


def measure(plan: Plan) -> list[LoadFigures]:
    """Every load of the plan with expiry at its default and off, runs of the two alternating so that a slower
    stretch of a shared machine hits both alike; each figure is the run with the median throughput."""
    figures = []
    for conversations in plan.concurrency:
        runs: dict[float, list[LoadFigures]] = {DEFAULT_CONVERSATION_TTL_SECONDS: [], 0.0: []}
        print(f"capacity: {conversations} conversation(s) at once...", file=sys.stderr)
        for _ in range(plan.repeats):
            for ttl, found in runs.items():
                found.append(measure_load(conversations, plan.turns_each[conversations], ttl))
        for found in runs.values():
            found.sort(key=lambda run: run.turns_per_second)
            median = found[len(found) // 2]
            median.runs_turns_per_second = [round(run.turns_per_second, 1) for run in found]
            figures.append(median)
    return figures


def table(figures: list[LoadFigures]) -> str:
    """The figures as a Markdown table."""
    lines = [
        "| conversations at once | expiry | turns | turns a second | p50 ms | p95 ms | CPU ms a turn "
        "| expiry orchestrations | runs (turns a second) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in figures:
        runs = ", ".join(f"{value:.0f}" for value in row.runs_turns_per_second)
        lines.append(
            f"| {row.conversations} | {row.expiry} | {row.turns} | {row.turns_per_second:.1f} | {row.p50_ms:.1f} | "
            f"{row.p95_ms:.1f} | {row.cpu_ms_per_turn:.1f} | {row.expiry_orchestrations} | {runs} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, write the JSON results."""
    parser = quick_parser(
        "python -m bench.capacity",
        __doc__.splitlines()[0],
        "tiny loads, one run each: shows that it works",
        RESULTS_FILE,
    )
    arguments = parser.parse_args(argv)
    figures = measure(QUICK if arguments.quick else FULL)
    print(table(figures))
    results = {
        "quick": arguments.quick,
        "machine": machine(),
        "median_of": (QUICK if arguments.quick else FULL).repeats,
        "loads": [asdict(row) for row in figures],
    }
    write_results(arguments.output, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
