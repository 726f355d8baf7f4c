"""The figures of the standalone benchmarks, as sections of docs/benchmarks.md.

Orchestrations, hosted workflows, streaming and capacity each have a benchmark of their own (minutes each, run on
their own: `python -m bench.<module>`), which keeps its results in `bench/results/<module>.json`. Every rewrite of
the docs page renders the latest of those files, with the machine each was measured on, so the page holds every
figure the project reports; a benchmark never run has no section.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _measured(figures: dict[str, Any], path: Path) -> str:
    """Which file the figures come from, and the machine they were measured on when the file says."""
    machine = figures.get("machine") or {}
    source = f"`bench/results/{path.name}`"
    if not machine:
        return source
    load = machine.get("load_average_at_start")
    return f"{source}, {machine.get('cpu', 'unknown CPU')}, {machine.get('cores', '?')} cores" + (
        f" (load average at start {', '.join(str(v) for v in load)})" if load else ""
    )


def _orchestration_cost(figures: dict[str, Any]) -> list[str]:
    lines = [
        "One orchestrator episode after N finished activities (CPU ms, median): the whole host path beside the SDK's",
        "replay alone and the JSON floor of the history. Replay grows with the history, so a whole run of N",
        "sequential steps grows about as N squared.",
        "",
        "| N | events | history bytes | JSON floor | SDK replay | host episode | host / floor | SDK share |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in figures["episodes"]:
        lines.append(
            f"| {row['steps']:,} | {row['events']:,} | {row['history_bytes']:,} | {row['floor_ms']:.2f} "
            f"| {row['sdk_replay_ms']:.1f} | {row['host_episode_ms']:.1f} | {row['host_over_floor']:.0f}x "
            f"| {row['sdk_share']:.2f} |"
        )
    runs = ", ".join(f"{row['steps']} steps {row['total_ms']:,.0f} ms" for row in figures.get("runs", ()))
    growth = figures.get("run_growth") or {}
    if runs and growth:
        lines += ["", f"Whole runs: {runs}; the total grows as N^{growth['exponent']:.2f}."]
    return lines


def _orchestration_agents(figures: dict[str, Any]) -> list[str]:
    lines = [
        "An N-step agent chain in one orchestration (wall ms, model answering at once, so all of it is the host's):",
        "",
        "| steps | total ms | per step ms | entity's turn ms | the rest per step ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in figures["chains"]:
        lines.append(
            f"| {row['steps']} | {row['total_ms']:,.1f} | {row['per_step_ms']:.1f} | {row['entity_turn_ms']:.1f} "
            f"| {row['rest_per_step_ms']:.1f} |"
        )
    lines += [
        "",
        f"For scale: a waited HTTP turn costs {figures['http_turn_ms']:.1f} ms, and a `task_all` of "
        f"{figures['fan_out_calls']} agent calls {figures['fan_out_ms']:.0f} ms "
        f"({figures['fan_out_per_call_ms']:.1f} ms a call).",
    ]
    return lines


def _workflow_cost(figures: list[dict[str, Any]]) -> list[str]:
    lines = [
        "A hosted workflow against the same workflow in process (wall ms of a waited run over HTTP on the local host;",
        "the model answers at once):",
        "",
        "| shape | supersteps | in process, ms a superstep | hosted, ms a superstep | hosted / in process |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in figures:
        lines.append(
            f"| {row['shape']} | {row['supersteps']} | {row['in_process_per_superstep_ms']:.2f} "
            f"| {row['hosted_per_superstep_ms']:.1f} | {row['hosted_over_in_process']:.1f}x |"
        )
    return lines


def _streaming_cost(figures: dict[str, Any]) -> list[str]:
    lines = [
        "First model word to the client's first `message.delta` (local host, HTTP streams, SQLite store):",
        "",
        "| streams at once | samples | p50 ms | p99 ms |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {row['streams']} | {row['samples']} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} |"
        for row in figures["latency"]
    ]
    lines += [
        "",
        "Storage writes per streamed turn (a word every 5 ms): they follow the answer's duration, not its length.",
        "",
        "| words | answer, first word to last | writes | bound: 3 + duration / 50 ms |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {row['words']:,} | {row['answer_seconds']:.2f} s | {row['writes']} | {row['bound']} |"
        for row in figures["writes"]
    ]
    cost = figures["cost"]
    lines += [
        "",
        f"Host CPU a turn of {cost['words']} words: {cost['streamed_cpu_ms']:.1f} ms streamed, "
        f"{cost['waited_cpu_ms']:.1f} ms waited ({cost['ratio']:.2f}x).",
    ]
    return lines


def _capacity(figures: dict[str, Any]) -> list[str]:
    lines = [
        f"Waited turns through the local host, offline model (median of {figures['median_of']} runs a load):",
        "",
        "| conversations at once | expiry | turns | turns a second | p50 ms | p95 ms | CPU ms a turn |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in figures["loads"]:
        lines.append(
            f"| {row['conversations']} | {row['expiry']} | {row['turns']} | {row['turns_per_second']:.1f} "
            f"| {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['cpu_ms_per_turn']:.1f} |"
        )
    return lines


WORKER_CALLS = {"http_ms": "trivial HTTP call", "entity_ms": "trivial entity operation", "agent_turn_ms": "agent turn"}


def _worker_invocation(figures: dict[str, Any]) -> list[str]:
    lines = [
        f"The same apps run both ways in one run, Python {figures['python']}, median of {figures['median_of']} calls:"
        " a trivial classic HTTP function through the whole host (request to last byte), a trivial entity operation",
        "and an agent's turn (zero-latency model) at the entity function the scheduler calls.",
        "",
        "| | direct ms | worker ms | the worker adds |",
        "|---|---:|---:|---:|",
    ]
    for key, label in WORKER_CALLS.items():
        direct, worker = figures["direct"][key], figures["worker"][key]
        lines.append(f"| {label} | {direct:.3f} | {worker:.3f} | {worker - direct:+.3f} ms |")
    return lines


# Each standalone benchmark: its section title, its module, the page that explains it, and its renderer.
SECTIONS: tuple[tuple[str, str, str, Callable[[Any], list[str]]], ...] = (
    ("Orchestration episodes", "orchestration_cost", "orchestrations-local-host.md", _orchestration_cost),
    ("Agents in an orchestration", "orchestration_agents", "orchestrations.md", _orchestration_agents),
    ("Hosted workflows", "workflow_cost", "workflows.md", _workflow_cost),
    ("Streaming", "streaming_cost", "streaming.md", _streaming_cost),
    ("Capacity", "capacity", "scaling.md", _capacity),
    ("The Python worker's own code under serve", "worker_invocation", "configuration.md", _worker_invocation),
)


def feature_sections(results_dir: Path = RESULTS_DIR) -> str:
    """Markdown sections for every standalone benchmark whose results file exists."""
    parts: list[str] = []
    for title, module, page, render in SECTIONS:
        path = results_dir / f"{module}.json"
        if not path.exists():
            continue
        figures = json.loads(path.read_text())
        machine = figures if isinstance(figures, dict) else {}
        parts += [
            f"### {title}",
            "",
            f"`python -m bench.{module}`; what it measures and what it shows: [{page}]({page}). "
            f"Figures from {_measured(machine, path)}.",
            "",
            *render(figures),
            "",
        ]
    return "\n".join(parts).rstrip()
