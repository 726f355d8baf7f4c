"""The figures of the benchmarks, as sections of docs/benchmarks.md and as blocks of the pages that explain them.

Orchestrations, hosted workflows, streaming, capacity and the state cache's memory each have a benchmark of their own
(minutes each, run on their own: `python -m bench.<module>`), which keeps its results in `bench/results/<module>.json`.
Every rewrite of the docs page renders the latest of those files, with the machine each was measured on, so the page
holds every figure the project reports; a benchmark never run has no section.

A feature's own page quotes its figures between markers, `<!-- figures: NAME -->` and `<!-- /figures -->`: the
lines between are exactly what block NAME (`PAGE_BLOCKS`) renders from its results file. Writing results rewrites
the blocks (`bench.standalone.write_results`, `python -m bench.docs_pages`), and tests/test_doc_figures.py fails when
a page's block is not what its results file renders, so a figure on a page is always the last measured one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MB = 1024 * 1024
# Azure Storage moves a queue message or table property over this size into a blob (docs/scaling.md, source 8).
AZURE_STORAGE_OFFLOAD_BYTES = 45_000
BLOCK = re.compile(
    r"(?P<start><!-- figures: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(?P<end><!-- /figures -->)", re.DOTALL
)


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


def _checkpoint_cost(figures: dict[str, Any]) -> list[str]:
    lines = [
        "Journal writes of one turn (an instant model calling a tool once per model call, then answering):",
        "",
        "| tool calls | model calls | journal writes | a model call | a tool call | next operation |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {row['tools']} | {row['model_calls']} | {row['appends']} | {row['per_model_call']:g} "
        f"| {row['per_tool_call']:g} | {row['deletes_next_operation']} delete |"
        for row in figures["writes"]
    ]
    lines += [
        "",
        f"Wall time a turn with checkpoints off and on, and its replay from a complete journal (a redelivery after a "
        f"lost commit), median of {figures['rounds']} interleaved rounds; a step is a model call or a tool call:",
        "",
        "| store | tool calls | steps | off ms | on ms | added ms a step | replay ms | replay ms a step |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    names = {"sqlite": "SQLite (local)", "azure_table": "Azure Tables (Azurite)"}
    lines += [
        f"| {names.get(row['store'], row['store'])} | {row['tools']} | {row['steps']} | {row['off_ms']:.1f} "
        f"| {row['on_ms']:.1f} | {row['added_ms_per_step']:.2f} | {row['replay_ms']:.1f} "
        f"| {row['replay_ms_per_step']:.2f} |"
        for row in figures["steps"]
    ]
    return lines


def _capacity(figures: dict[str, Any]) -> list[str]:
    lines = [
        f"Waited turns through the local host, offline model (median of {figures['median_of']} runs a load):",
        "",
        "| conversations at once | expiry | turns | turns a second | p50 ms | p95 ms | CPU ms a turn "
        "| every run, turns a second |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in figures["loads"]:
        runs = ", ".join(f"{value:.0f}" for value in row.get("runs_turns_per_second", ()))
        lines.append(
            f"| {row['conversations']} | {row['expiry']} | {row['turns']} | {row['turns_per_second']:.1f} "
            f"| {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['cpu_ms_per_turn']:.1f} | {runs} |"
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


def state_cache_estimate(figures: dict[str, Any]) -> list[str]:
    """What one cached conversation holds (tracemalloc) beside the cache's own estimate, by kind of history."""
    lines = [
        "What the state cache holds for one conversation after two turns, measured (tracemalloc) and estimated:",
        "",
        "| history | state characters | messages | held, measured | estimated | estimated / measured |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in figures["shapes"]:
        lines.append(
            f"| {row['shape']} | {row['state_chars']:,} | {row['messages']:,} | {row['measured_bytes'] / MB:.1f} MB "
            f"| {row['estimated_bytes'] / MB:.1f} MB | {row['estimated_over_measured']:.2f} |"
        )
    return lines


def state_cache_rss(figures: dict[str, Any]) -> list[str]:
    """A worker's peak RSS while its conversations take turns round-robin, by cache bound."""
    plan, first = figures["plan"], figures["workers"][0]
    lines = [
        f"A worker process whose {plan['conversations']} conversations of {first['state_chars']:,} characters take a "
        f"turn each, round-robin, {plan['rounds']} rounds:",
        "",
        "| `AGENT_HOST_STATE_CACHE_MB` | RSS before | peak RSS, round 1 | peak RSS, last round | conversations cached "
        "| cache estimate |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for worker in figures["workers"]:
        first_round, last = worker["rounds"][0], worker["rounds"][-1]
        lines.append(
            f"| {worker['bound_mb']:,} | {worker['rss_before_mb']:,.0f} MB | {first_round['peak_rss_mb']:,.0f} MB "
            f"| {last['peak_rss_mb']:,.0f} MB | {last['cached']} | {last['estimated_mb']:,.0f} MB |"
        )
    return lines


def state_cache_flex(figures: dict[str, Any]) -> list[str]:
    """The bound the deployment sets per Flex Consumption instance size, and the worker's peak RSS measured at it."""
    peaks = {worker["bound_mb"]: worker["rounds"][-1]["peak_rss_mb"] for worker in figures["workers"]}
    lines = [
        "| instance memory | `AGENT_HOST_STATE_CACHE_MB` | worker peak RSS at that bound | share of the instance |",
        "|---:|---:|---:|---:|",
    ]
    for memory, bound in figures.get("flex_consumption_cache_mb", {}).items():
        peak = peaks.get(bound)
        measured = "not measured" if peak is None else f"{peak:,.0f} MB"
        share = "" if peak is None else f"{peak / int(memory):.0%}"
        lines.append(f"| {int(memory):,} MB | {bound:,} | {measured} | {share} |")
    return lines


def _state_cache_memory(figures: dict[str, Any]) -> list[str]:
    return [*state_cache_estimate(figures), "", *state_cache_rss(figures), "", *state_cache_flex(figures)]


def _turn_costs(figures: dict[str, Any]) -> list[str]:
    """The full benchmark's figures a capacity estimate needs: host CPU a turn by size, bytes a message, HTTP."""
    lines = ["| what | figure |", "|---|---:|"]
    for row in figures["turn_cost"]:
        lines.append(
            f"| host CPU per turn, {row['messages']:,} stored messages ({row['state_bytes']:,} bytes), warm / cold "
            f"| {row['ours_warm_ms']:.2f} / {row['ours_cold_ms']:.2f} ms |"
        )
    sizes = figures["bytes_per_message"]["sizes"]
    http = figures["http"]
    lines += [
        f"| stored bytes a message, {size['messages']:,} messages (whole state / transcript) "
        f"| {size['ours_state']:.0f} / {size['ours_transcript']:.0f} |"
        for size in sizes
    ]
    lines += [
        f"| messages of this kind before the state passes 45 KB (Azure Storage's blob offload) "
        f"| about {round(AZURE_STORAGE_OFFLOAD_BYTES / sizes[min(1, len(sizes) - 1)]['ours_state'], -1):.0f} |",
        f"| local host, {http['concurrent_conversations']} concurrent conversations: turns a second / p50 ms "
        f"| {http['turns_per_second']:.1f} / {http['concurrent_p50_ms']:.1f} |",
    ]
    return lines


# Each store's name in the results, how the page names it, and how its reader learns of an append.
_STREAM_STORES = (
    ("sqlite", "SQLite", "in-process wake-up"),
    ("azure_table", "Azure Table (Azurite)", "polling"),
    ("redis", "Redis", "`XREAD BLOCK`"),
)


def _stream_store_latency(figures: dict[str, Any]) -> list[str]:
    """`tests/streaming_stores/measure_latency.py`: each store's append, read and wake-up latency (p50 / p99)."""

    def pair(values: dict[str, float]) -> str:
        return f"{values['p50_ms']:.2f} / {values['p99_ms']:.2f} ms"

    lines = [
        f"{figures['operations']} appends and reads, {figures['rounds']} wake-ups a store (20 streams: "
        f"{max(1, figures['rounds'] // 20)} rounds of 20), an append every "
        f"{figures['interval_seconds'] * 1000:.0f} ms:",
        "",
        "| Store | append p50 / p99 | read next p50 / p99 | wake-up, 1 stream p50 / p99 "
        "| wake-up, 20 streams p50 / p99 |",
        "|---|---|---|---|---|",
    ]
    for key, name, wake_up in _STREAM_STORES:
        store = figures["stores"].get(key)
        if store is not None:
            lines.append(
                f"| {name} | {pair(store['append'])} | {pair(store['read_next'])} "
                f"| {pair(store['wake_1_stream'])} ({wake_up}) | {pair(store['wake_20_streams'])} |"
            )
    return lines


def _durabletask_turns(figures: dict[str, Any]) -> list[str]:
    """`bench.durabletask_turns`: AgentClient turn latency on the in-memory backend, and turns at once by pool."""
    latency, load = figures["latency"], figures["concurrency"]
    lines = [
        "A turn through `AgentClient` to an `AgentWorker` on durabletask's in-memory backend (a gRPC sidecar in the "
        "same process), zero-latency model, p50 of the last 20 turns (or fewer) at each size:",
        "",
        "| turns taken | stored messages | p50 ms | max ms |",
        "|---:|---:|---:|---:|",
    ]
    lines += [f"| {r['turns']} | {r['messages']} | {r['p50_ms']:.1f} | {r['max_ms']:.1f} |" for r in latency["rows"]]
    lines += [
        "",
        f"The backend's own round trip (a trivial entity operation, signal to state read back): "
        f"{latency['entity_round_trip_p50_ms']:.1f} ms p50.",
        "",
        f"{load['conversations']} conversations each sending one turn at once, each turn a {load['model_seconds']:g} s "
        "model call:",
        "",
        "| worker thread pool | threads | wall time | turns a second |",
        "|---|---:|---:|---:|",
    ]
    for key, label in (("sdk_default", "the SDK's default"), ("worker_options", "`worker_options()`")):
        pool = load[key]
        lines.append(f"| {label} | {pool['threads']} | {pool['wall_seconds']:.2f} s | {pool['turns_per_second']:.1f} |")
    published = figures.get("published")
    if published is not None and "rows" in published:
        ours = {row["turns"]: row for row in latency["rows"]}
        lines += [
            "",
            f"The same turns through agent-framework-durabletask {published['version']} (`DurableAIAgentWorker`, "
            "`DurableAIAgentClient.get_agent(...).run`) on the same kind of backend, p50 over the same turns:",
            "",
            "| turns taken | agent-host p50 ms | published p50 ms |",
            "|---:|---:|---:|",
        ]
        lines += [
            f"| {row['turns']} | {ours[row['turns']]['p50_ms']:.1f} | {row['p50_ms']:.1f} |"
            for row in published["rows"]
            if row["turns"] in ours
        ]
    elif published is not None:
        lines += ["", f"The published worker was not measured: {published['unavailable']}"]
    return lines


# Each standalone benchmark: its section title, its module, the page that explains it, and its renderer.
SECTIONS: tuple[tuple[str, str, str, Callable[[Any], list[str]]], ...] = (
    ("Orchestration episodes", "orchestration_cost", "orchestrations-local-host.md", _orchestration_cost),
    ("Agents in an orchestration", "orchestration_agents", "orchestrations.md", _orchestration_agents),
    ("Hosted workflows", "workflow_cost", "workflows.md", _workflow_cost),
    ("Streaming", "streaming_cost", "streaming.md", _streaming_cost),
    ("Checkpointed turns", "checkpoint_cost", "exactly-once.md", _checkpoint_cost),
    ("Capacity", "capacity", "scaling.md", _capacity),
    ("The Python worker's own code under serve", "worker_invocation", "configuration.md", _worker_invocation),
    ("Memory of the state cache", "state_cache_memory", "scaling.md", _state_cache_memory),
    ("The standalone worker", "durabletask_turns", "standalone-worker.md", _durabletask_turns),
)

# The blocks a docs page may quote: by name, the results file (its stem) and the renderer. Each section's own
# renderer is a block of its name; the others quote part of a results file.
PAGE_BLOCKS: dict[str, tuple[str, Callable[[Any], list[str]]]] = {
    **{module: (module, render) for _, module, _, render in SECTIONS},
    "turn_costs": ("latest", _turn_costs),
    "state_cache_estimate": ("state_cache_memory", state_cache_estimate),
    "state_cache_rss": ("state_cache_memory", state_cache_rss),
    "state_cache_flex": ("state_cache_memory", state_cache_flex),
    "stream_store_latency": ("stream_store_latency", _stream_store_latency),
}


def page_block(name: str, results_dir: Path = RESULTS_DIR) -> str:
    """The lines block `name` holds: where its figures come from, then its rendering of them."""
    stem, render = PAGE_BLOCKS[name]
    path = results_dir / f"{stem}.json"
    figures = json.loads(path.read_text())
    machine = figures if isinstance(figures, dict) else {}
    return "\n".join([f"Figures from {_measured(machine, path)}:", "", *render(figures), ""])


def with_blocks_rendered(page: str, results_dir: Path = RESULTS_DIR) -> str:
    """`page` with every figures block holding what its results file renders now.

    Raises:
        KeyError: a block names no known renderer.
    """
    return BLOCK.sub(lambda match: match["start"] + page_block(match["name"], results_dir) + "\n" + match["end"], page)


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
