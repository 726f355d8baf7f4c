"""The benchmark's results: the figures and targets as JSON, a table for the terminal, the docs page and its plot."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from .feature_figures import feature_sections
from .parts import parts_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS_FILE = ROOT / "bench" / "results" / "latest.json"
DOCS_FILE = ROOT / "docs" / "benchmarks.md"
PLOT_FILE = ROOT / "docs" / "benchmarks.png"

# (name, rule, limit, from the issue): the issue's targets judge the warm turn, the usual case for a worker that
# keeps serving a conversation; the cold turn and the other rows are held to the same limits as a stricter check.
TARGETS = (
    ("ours / floor at 200 messages (warm)", "at most", 3.0, True),
    ("ours / floor at 2,000 messages (warm)", "at most", 3.0, True),
    ("ours / floor at 200 messages (cold)", "at most", 3.0, False),
    ("ours / floor at 2,000 messages (cold)", "at most", 3.0, False),
    ("published / ours at 2,000 messages (warm)", "at least", 4.0, True),
    ("published / ours at 2,000 messages (cold)", "at least", 4.0, False),
    ("bytes per message, ours / published (whole state)", "at most", 0.6, True),
    ("bytes per message, ours / published (transcript)", "at most", 0.6, False),
    ("waited-turn host-added latency p50 (ms)", "at most", 50.0, True),
    ("auto retention: turn 1,000 / turn 100 (warm)", "at most", 1.3, True),
    ("auto retention: turn 1,000 / turn 100 (mean of 20 turns)", "at most", 1.3, False),
    ("ours cold / core alone at 200 messages", "at most", 1.5, True),
    ("ours cold / core alone at 2,000 messages", "at most", 1.5, True),
)


def machine() -> dict[str, Any]:
    """The machine the figures come from."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "load_average_at_start": [round(value, 2) for value in load],
    }


def versions() -> dict[str, str]:
    """Versions of what was measured."""
    found = {}
    for package in ("agent-framework-core", "azure-functions", "azure-functions-durable", "pydantic"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        found["agent-host commit"] = f"{commit} with uncommitted changes" if changed else commit
    except (OSError, subprocess.CalledProcessError):
        found["agent-host commit"] = "unknown"
    return found


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with the measured value and whether it is met (None when the figure is missing)."""
    by_size = {row["messages"]: row for row in results["turn_cost"]}
    small, large = (by_size.get(200), by_size.get(2000)) if not results["quick"] else (None, None)
    retention = results["retention"]
    values = [
        small and small["ours_warm_over_floor"],
        large and large["ours_warm_over_floor"],
        small and small["ours_cold_over_floor"],
        large and large["ours_cold_over_floor"],
        large and large.get("published_over_ours_warm"),
        large and large.get("published_over_ours_cold"),
        results["bytes_per_message"].get("state_ratio"),
        results["bytes_per_message"].get("transcript_ratio"),
        results["http"]["p50_ms"],
        retention["ratio_warm"],
        retention["ratio_mean"],
        small and small["ours_cold_over_core"],
        large and large["ours_cold_over_core"],
    ]
    evaluated = []
    for (name, rule, limit, from_issue), value in zip(TARGETS, values, strict=True):
        met = None if value is None else (value <= limit if rule == "at most" else value >= limit)
        row = {"target": name, "rule": f"{rule} {limit:g}", "value": value, "met": met, "from_issue": from_issue}
        evaluated.append(row)
    return evaluated


def turn_cost_rows(costs: list[Any], published: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Section 1 rows: ours cold and warm, the floor, core alone, the published host, and their ratios."""
    theirs = {row["messages"]: row for row in (published or {}).get("sizes", [])}
    rows = []
    for cost in costs:
        other = theirs.get(cost.messages, {})
        rows.append(
            {
                "messages": cost.messages,
                "state_bytes": cost.state_bytes,
                "transcript_bytes": cost.transcript_bytes,
                "floor_ms": cost.floor_ms,
                "ours_cold_ms": cost.cold_ms,
                "ours_warm_ms": cost.warm_ms,
                "core_alone_ms": cost.core_ms,
                "core_restored_ms": cost.core_restored_ms,
                "core_copies_ms": cost.core_copies_ms,
                "published_ms": other.get("turn_ms"),
                "published_floor_ms": other.get("floor_ms"),
                "published_state_bytes": other.get("state_bytes"),
                "ours_cold_over_floor": _ratio(cost.cold_ms, cost.floor_ms),
                "ours_warm_over_floor": _ratio(cost.warm_ms, cost.floor_ms),
                "ours_cold_over_core": _ratio(cost.cold_ms, cost.core_ms),
                "ours_warm_over_core": _ratio(cost.warm_ms, cost.core_ms),
                "ours_cold_over_core_restored": _ratio(cost.cold_ms, cost.core_restored_ms),
                "core_restored_over_core": _ratio(cost.core_restored_ms, cost.core_ms),
                "core_alone_over_floor": _ratio(cost.core_ms, cost.floor_ms),
                "core_copies_over_floor": _ratio(cost.core_copies_ms, cost.floor_ms),
                "published_over_ours_cold": _ratio(other.get("turn_ms"), cost.cold_ms),
                "published_over_ours_warm": _ratio(other.get("turn_ms"), cost.warm_ms),
                "published_over_its_floor": _ratio(other.get("turn_ms"), other.get("floor_ms")),
            }
        )
    return rows


def bytes_per_message(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Section 2: stored bytes per message at each size, and ours / published at the largest size measured."""
    sizes = []
    for row in rows:
        messages = row["messages"]
        published = row["published_state_bytes"]
        sizes.append(
            {
                "messages": messages,
                "ours_state": row["state_bytes"] / messages,
                "ours_transcript": row["transcript_bytes"] / messages,
                "published": published / messages if published else None,
            }
        )
    largest = sizes[-1]
    return {
        "sizes": sizes,
        "at_messages": largest["messages"],
        "state_ratio": _ratio(largest["ours_state"], largest["published"]),
        "transcript_ratio": _ratio(largest["ours_transcript"], largest["published"]),
    }


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}x"


def _ratio_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def table(results: dict[str, Any]) -> str:
    """The figures as plain-text tables for the terminal (also used in the docs page)."""
    lines = [
        "Per-turn host cost (CPU ms per turn, median; model excluded)",
        "",
        "| stored messages | state bytes | JSON floor | ours warm | ours cold | core alone | published "
        "| warm / floor | cold / floor | cold / core | published / warm | published / cold |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["turn_cost"]:
        lines.append(
            f"| {row['messages']:,} | {row['state_bytes']:,} | {_fmt(row['floor_ms'])} | {_fmt(row['ours_warm_ms'])} "
            f"| {_fmt(row['ours_cold_ms'])} | {_fmt(row['core_alone_ms'])} | {_fmt(row['published_ms'])} "
            f"| {_times(row['ours_warm_over_floor'])} | {_times(row['ours_cold_over_floor'])} "
            f"| {_ratio_text(row['ours_cold_over_core'])} | {_times(row['published_over_ours_warm'])} "
            f"| {_times(row['published_over_ours_cold'])} |"
        )
    lines += [
        "",
        "Cold turns against core's own run (CPU ms per turn, median, same rounds): core handed ready messages, and "
        "core restoring its session from the JSON it writes itself (`AgentSession.to_dict`/`from_dict`)",
        "",
        "| stored messages | ours warm | ours cold | core, ready | core, restored | warm / core | cold / core "
        "| core restored / core | cold / core restored |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["turn_cost"]:
        lines.append(
            f"| {row['messages']:,} | {_fmt(row['ours_warm_ms'])} | {_fmt(row['ours_cold_ms'])} "
            f"| {_fmt(row['core_alone_ms'])} | {_fmt(row['core_restored_ms'])} "
            f"| {_ratio_text(row['ours_warm_over_core'])} | {_ratio_text(row['ours_cold_over_core'])} "
            f"| {_ratio_text(row['core_restored_over_core'])} | {_ratio_text(row['ours_cold_over_core_restored'])} |"
        )
    lines += [
        "",
        "Bytes stored per message",
        "",
        "| stored messages | ours, whole state | ours, transcript only | published |",
        "|---:|---:|---:|---:|",
    ]
    for size in results["bytes_per_message"]["sizes"]:
        lines.append(
            f"| {size['messages']:,} | {_fmt(size['ours_state'], 0)} | {_fmt(size['ours_transcript'], 0)} "
            f"| {_fmt(size['published'], 0)} |"
        )
    http = results["http"]
    retention = results["retention"]
    lines += [
        "",
        "Waited turns through the HTTP API (local host, wall time)",
        "",
        "| sequential turns | p50 ms | p99 ms | mean ms | concurrent conversations | turns | turns/s "
        "| p50 ms under load |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {http['sequential_turns']} | {_fmt(http['p50_ms'], 1)} | {_fmt(http['p99_ms'], 1)} "
        f"| {_fmt(http['mean_ms'], 1)} | {http['concurrent_conversations']} | {http['concurrent_turns']} "
        f"| {_fmt(http['turns_per_second'], 1)} | {_fmt(http['concurrent_p50_ms'], 1)} |",
        "",
        f"`auto` retention, budget {retention['max_state_bytes']:,} bytes (high watermark reached at turn "
        f"{retention['early']['turns']}); {retention['evicted_messages']:,} messages evicted by turn "
        f"{retention['late']['turns']}",
        "",
        "| after turn | stored messages | state bytes | warm ms | cold ms | mean ms of the 20 turns before |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for point, mean in (("early", "early_amortized_ms"), ("late", "late_amortized_ms")):
        cost = retention[point]
        lines.append(
            f"| {cost['turns']:,} | {cost['messages']:,} | {cost['state_bytes']:,} | {_fmt(cost['warm_ms'])} "
            f"| {_fmt(cost['cold_ms'])} | {_fmt(retention[mean])} |"
        )
    lines += [
        "",
        "Targets (the issue's judge the warm turn; the others apply the same limits as a stricter check)",
        "",
        "| target | rule | measured | met | the issue's |",
        "|---|---|---:|---|---|",
    ]
    for target in results["targets"]:
        met = {True: "yes", False: "**no**", None: "n/a"}[target["met"]]
        issue = "yes" if target["from_issue"] else "stricter"
        lines.append(f"| {target['target']} | {target['rule']} | {_fmt(target['value'])} | {met} | {issue} |")
    if results.get("parts"):
        lines += ["", parts_table(results["parts"])]
    if results["published_status"] != "measured":
        lines += ["", f"Published host: {results['published_status']}"]
    return "\n".join(lines)


def write_json(results: dict[str, Any], path: Path) -> None:
    """Write the results as JSON (through a temporary file, so a failed run never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(results, indent=2) + "\n")
    temporary.replace(path)


def write_plot(results: dict[str, Any], path: Path) -> None:
    """Per-turn cost against stored messages for ours (warm and cold), the published host and the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["turn_cost"]
    messages = [row["messages"] for row in rows]
    figure, axes = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    series = (
        ("published_ms", "published host (agent-framework-azurefunctions)", "tab:red", "s"),
        ("ours_cold_ms", "agent-host, cold (state not cached)", "tab:orange", "^"),
        ("ours_warm_ms", "agent-host, warm (state this process wrote)", "tab:blue", "o"),
        ("core_alone_ms", "core agent.run alone, no host", "tab:gray", "x"),
        ("floor_ms", "JSON floor (json.loads + json.dumps of the state)", "black", "."),
    )
    for key, label, color, marker in series:
        points = [(m, row[key]) for m, row in zip(messages, rows, strict=True) if row.get(key) is not None]
        if points:
            axes.plot(*zip(*points, strict=True), label=label, color=color, marker=marker)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("stored messages")
    axes.set_ylabel("CPU ms per turn (median, model excluded)")
    axes.set_title("Host cost per turn vs conversation length")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


# Section 1 measured the same way (CPU time, interleaved with the floor, same machine) on the same code without
# the state cache (`agent_host/_conversation/state_cache.py`), record reuse in reconciliation and the quick message
# check.
BEFORE = {"over_floor": {20: 9.5, 200: 6.6, 2000: 10.0}}
# The cold turn before the state cache was split and the stored transcript text reused (commit d448f47).
COLD_BEFORE = "6.02 ms cold / 3.03 ms core (2.0x) at 200 messages, 51.12 ms / 23.82 ms (2.1x) at 2,000"


def analysis(results: dict[str, Any]) -> str:
    """A few sentences reading the tables: where the time goes, and which targets are missed and why."""
    rows = {row["messages"]: row for row in results["turn_cost"]}
    largest = rows[max(rows)]
    lines = []
    core = largest.get("core_alone_ms")
    if core is not None:
        lines.append(
            f"- At {largest['messages']:,} messages core's own `agent.run` (no host, on a loop thread as every "
            f"host runs it) costs {core:.1f} ms, {core / largest['floor_ms']:.1f}x the JSON floor by itself: it copies "
            f"every history message twice per run, and those two copies alone (`SessionContext.extend_messages` "
            f"and the function-invocation layer's copy, timed in the same rounds) cost "
            f"{largest['core_copies_ms']:.1f} ms, {largest['core_copies_over_floor']:.1f}x the floor. "
            f"agent-host's warm turn adds "
            f"{largest['ours_warm_ms'] - core:.1f} ms to that (decoding, reconciling and encoding the state, the "
            "Functions batch format, delivery records, retention), and its cold turn "
            f"{largest['ours_cold_ms'] - core:.1f} ms. No host can spend less than the core run it makes, so "
            "core's own ratio to the floor is a lower bound for every host's."
        )
        bounds = ", ".join(
            f"{row['core_alone_over_floor']:.1f}x at {size:,} messages "
            f"(its two copies {row['core_copies_over_floor']:.1f}x)"
            for size, row in rows.items()
            if size >= 200 and row.get("core_copies_over_floor") is not None
        )
        if bounds:
            lines.append(
                f"- Core alone against the floor: {bounds}. Where that is over 3, the target of at most 3x the floor "
                "is out of reach for any host that runs the agent with this version of core, before any work of "
                "its own."
            )
    if largest.get("published_ms") is not None:
        lines.append(
            f"- The published host costs {largest['published_ms']:.1f} ms there, "
            f"{largest['published_over_its_floor']:.1f}x its own floor: "
            f"{largest['published_over_ours_warm']:.1f}x agent-host warm and "
            f"{largest['published_over_ours_cold']:.1f}x agent-host cold."
        )
    cold_over_core = [
        (size, row["ours_cold_over_core"]) for size, row in rows.items() if row.get("ours_cold_over_core")
    ]
    if cold_over_core:
        measured = ", ".join(f"{ratio:.2f}x at {size:,} messages" for size, ratio in cold_over_core)
        lines.append(
            f"- A cold turn costs {measured} core's own run (goal: at most 1.5x). Beyond a warm turn it decodes and "
            "validates the state and builds one core `Message` per stored record, each with a `Content` of 46 "
            "attributes: work core's own run, handed ready messages, never does. Its encoding is nearly free "
            "(the transcript's stored text is written back), and the parts table below says what each remaining "
            f"part of the cache buys. Before this round (2026-11-29): {COLD_BEFORE}."
        )
    restored = [(size, row) for size, row in rows.items() if size >= 200 and row.get("core_restored_over_core")]
    if restored:
        own = ", ".join(f"{row['core_restored_over_core']:.2f}x at {size:,}" for size, row in restored)
        ours = ", ".join(f"{row['ours_cold_over_core_restored']:.2f}x at {size:,}" for size, row in restored)
        lines.append(
            f"- Core's own cold turn, its session restored from the JSON core writes for it, costs {own} messages "
            f"its run with ready messages: above the 1.5x goal before any host work. agent-host's cold turn, "
            f"Functions batch format, receipts and retention included, costs {ours} core's own cold turn."
        )
    before = " / ".join(f"{ratio:g}x at {size:,}" for size, ratio in BEFORE["over_floor"].items())
    now = " / ".join(
        f"{rows[size]['ours_warm_over_floor']:.1f}x warm, {rows[size]['ours_cold_over_floor']:.1f}x cold at {size:,}"
        for size in BEFORE["over_floor"]
        if size in rows
    )
    lines.append(
        f"- Before the state cache (the same code without it, measured the same way in November on another machine: "
        f"ratios to the floor carry between machines, milliseconds do not) a turn cost {before} messages the "
        f"floor; now {now}."
    )
    sizes = results["bytes_per_message"]
    if sizes.get("state_ratio") is not None:
        lines.append(
            f"- Stored bytes: the transcript takes {sizes['transcript_ratio']:.2f}x the published host's bytes per "
            f"message, and the whole state {sizes['state_ratio']:.2f}x at {sizes['at_messages']:,} messages. "
            "Schema version 2 brought the whole state down from 0.65x (measured the same way): a turn record now "
            "names the transcript messages holding its answer instead of copying them (a copy moves in only when "
            "compaction changes or retention deletes such a message), and the agent's own name is implied on its "
            "assistant messages. The 100 turn records kept for callers are a bounded overhead that weighs most in "
            "short conversations."
        )
    return "\n".join(lines)


# The benchmarks with their own command: what each measures, its module, and the page holding its figures.
OTHER_BENCHMARKS = (
    ("retention budget: state, transcript and receipt bytes per turn", "retention_budget", "retention.md"),
    (
        "an orchestration episode on the local host, against the SDK's replay",
        "orchestration_cost",
        "orchestrations-local-host.md",
    ),
    ("agent steps in an orchestration, against a waited HTTP turn", "orchestration_agents", "orchestrations.md"),
    ("a hosted workflow, against the same workflow in process", "workflow_cost", "workflows.md"),
    ("streamed turns: first delta, storage writes, host cost", "streaming_cost", "streaming.md"),
    ("checkpointed turns: journal writes and milliseconds a step, replay", "checkpoint_cost", "exactly-once.md"),
    ("turns a second by conversations, and idle expiry's cost", "capacity", "scaling.md"),
    (
        "what running functions through the Python worker's own code costs under serve",
        "worker_invocation",
        "configuration.md#which-code-runs-your-functions-under-serve",
    ),
    ("what the state cache holds, and a worker's memory under each bound", "state_cache_memory", "scaling.md"),
)


def other_benchmarks() -> str:
    """The table of the benchmarks with their own command, for the docs page."""
    rows = [
        f"| {what} | `python -m bench.{module}` | [{page.split('#')[0]}]({page}) |"
        for what, module, page in OTHER_BENCHMARKS
    ]
    return "\n".join(["| benchmark | command | figures |", "|---|---|---|", *rows])


def write_docs(results: dict[str, Any], path: Path, plot: Path, results_dir: Path = RESULTS_FILE.parent) -> None:
    """The docs page: how to run, the machine and versions, the tables, the plot and how it was measured (the
    standalone benchmarks' sections from the results files in `results_dir`)."""
    info = results["machine"]
    versions_lines = "\n".join(f"- {name}: {version}" for name, version in results["versions"].items())
    page = f"""# Benchmarks

What a turn costs the host itself (everything but the model), next to the unavoidable floor (one decode and one
encode of the conversation state) and next to the host most people use today, Microsoft's
`agent-framework-azurefunctions` {results.get("published_version", "")}. Run them with:

```bash
.venv/bin/python -m bench            # full run (about 10 minutes; installs the published host on first use)
.venv/bin/python -m bench --quick    # smoke run in seconds, without the published host
```

Results: `bench/results/latest.json`; this page and `docs/benchmarks.png` are rewritten by every full run.
`python -m bench --parts` measures only what each part of the state cache buys (the last table below).

The other benchmarks each have their own command and report their figures on the page of their feature:

{other_benchmarks()}

## Latest results

Measured {results["generated_at"]} on {info["cpu"]} ({info["cores"]} cores, {info["system"]}, Python
{info["python"]}; load average at start {", ".join(str(v) for v in info["load_average_at_start"])}).

{versions_lines}
- {results.get("published_package", "published host")}: {results.get("published_version", "n/a")}

![Per-turn cost vs stored messages]({plot.name})

{table(results)}

## What the numbers say

{analysis(results)}

## Orchestrations, workflows, streaming, capacity and memory

{feature_sections(results_dir)}

## How it is measured

- **Workload.** A zero-latency scripted model answers each ~70-character user message with a ~200-character
  reply (and a usage record, as real models do). One conversation grows through real turns, and one more turn
  is timed from the snapshot at 20, 200 and 2,000 stored messages.
- **Through the entity function.** Turns go through the entity function exactly as the Functions host calls it:
  the host's JSON batch (state as a JSON string, operation input encoded twice) in, the JSON result out. The
  published host's `dafx-{{name}}` entity is driven the same way, with the same messages, in its own virtual
  environment (`bench/.venvs/`), by a driver process that times one of its turns (or its floor) per request,
  so its figures join the same rounds as ours.
- **Cold and warm.** *Cold*: the process has never seen the state string (every cache cleared), as after a
  restart or when another worker wrote the state. *Warm*: the state string handed in is the one this process
  wrote last, the usual case for a worker that keeps serving a conversation; agent-host then reuses the decoded
  state, the messages built from it and their JSON (`agent_host/_conversation/state_cache.py`). The published host keeps
  nothing between operations, so it has one figure.
- **CPU time, interleaved.** Each figure is the median over the repeats of the CPU time of the whole process
  (`time.process_time`, every thread), after a warm-up and a garbage collection: the machines are shared, and
  CPU time measures the work a turn does, not how long it waited for a core. Floor, cold, warm, core and
  published runs alternate round by round, so their ratios come from the same conditions.
- **Core alone** is core's own in-memory `agent.run` over the same messages with no host at all: the part of
  any host's turn that no host can remove.
- **Bytes per message** is the stored state size divided by the stored messages. Our state also holds up to
  100 turn records (each turn's status, usage and the ids of its answer's messages, kept for its caller), a
  bounded overhead that weighs most in short conversations; "transcript only" is the messages array alone.
- **HTTP latency** is wall time of `POST .../turns` with `wait: true` against `python -m agent_host serve`'s
  local host on loopback; the model takes no time, so all of it is host-added.
- **Retention.** A budget whose high watermark (85%) is reached at turn 100; turns 101 and 1,001 timed as above,
  and the mean of the 20 turns before each (evictions included), each window replayed from the state it started
  from, early and late alternating round by round (median round), so both share the machine's conditions.
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
