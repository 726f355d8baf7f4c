"""`python -m bench`: run every benchmark, print the tables, write bench/results/latest.json and the docs page."""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import docs_pages, report
from .entity_cost import measure_turn_costs
from .http_latency import measure_latency
from .parts import measure_parts, parts_table
from .published import PUBLISHED_PACKAGE, PUBLISHED_VERSION, PublishedHost, PublishedHostUnavailableError
from .retention_cost import measure_retention


@dataclass(frozen=True)
class Plan:
    """How much to measure: the full run, or a smoke run that only shows everything still works."""

    sizes: tuple[int, ...]
    repeats: int
    sequential_turns: int
    conversations: int
    turns_each: int
    early_turn: int
    late_turn: int
    max_turn_records: int


FULL = Plan(
    sizes=(20, 200, 2000),
    repeats=9,
    sequential_turns=250,
    conversations=20,
    turns_each=10,
    early_turn=100,
    late_turn=1000,
    max_turn_records=100,
)
QUICK = Plan(
    sizes=(20, 60),
    repeats=3,
    sequential_turns=20,
    conversations=4,
    turns_each=3,
    early_turn=10,
    late_turn=40,
    max_turn_records=5,
)


def run(*, quick: bool, published: bool) -> dict[str, Any]:
    """Measure everything and return the results (figures, targets, machine, versions)."""
    plan = QUICK if quick else FULL
    started = datetime.datetime.now(datetime.UTC)
    machine = report.machine()
    published_figures = None
    status = "skipped (quick mode)" if quick else "skipped (--no-published)"
    published_host = None
    if published:
        _progress("published host: installing it (first run only) and starting its driver...")
        try:
            published_host = PublishedHost()
        except PublishedHostUnavailableError as exc:
            status = f"unavailable: {exc}"
    _progress("agent-host (and the published host): growing a conversation and timing turns...")
    try:
        costs = measure_turn_costs(list(plan.sizes), plan.repeats, published_host)
    finally:
        if published_host is not None:
            published_host.close()
    if published_host is not None:
        status = "measured"
        published_figures = {
            "version": published_host.version,
            "core_version": published_host.core_version,
            "sizes": [cost.extra["published"] for cost in costs],
        }
    rows = report.turn_cost_rows(costs, published_figures)
    _progress("HTTP API: waited turns on the local host...")
    http = measure_latency(plan.sequential_turns, plan.conversations, plan.turns_each)
    _progress("auto retention: a long conversation over a small budget...")
    retention = measure_retention(plan.early_turn, plan.late_turn, plan.repeats, plan.max_turn_records)
    retention_figures = retention.as_dict()
    retention_figures["ratio_warm"] = retention.late.warm_ms / retention.early.warm_ms
    retention_figures["ratio_cold"] = retention.late.cold_ms / retention.early.cold_ms
    retention_figures["ratio_mean"] = retention.late_amortized_ms / retention.early_amortized_ms
    _progress("state cache: each part turned off in turn...")
    parts = measure_parts(_parts_sizes(plan), plan.repeats)
    results: dict[str, Any] = {
        "generated_at": started.strftime("%Y-%m-%d %H:%M UTC"),
        "quick": quick,
        "machine": machine,
        "versions": report.versions(),
        "published_package": PUBLISHED_PACKAGE,
        "published_version": (published_figures or {}).get("version", PUBLISHED_VERSION),
        "published_status": status,
        "repeats": plan.repeats,
        "turn_cost": rows,
        "bytes_per_message": report.bytes_per_message(rows),
        "http": http.as_dict(),
        "retention": retention_figures,
        "parts": parts,
    }
    results["targets"] = report.evaluate_targets(results)
    return results


def _parts_sizes(plan: Plan) -> list[int]:
    """The sizes the state cache's parts are measured at: the issue's 200 and 2,000 (all sizes of a quick run)."""
    return [size for size in plan.sizes if size >= 200] or list(plan.sizes)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print the tables, write the results (and, for a full run, the docs page)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run in seconds, without the published host")
    parser.add_argument("--no-published", action="store_true", help="skip the published host")
    parser.add_argument(
        "--output", type=Path, help="where to write the JSON (default: bench/results/latest.json for a full run)"
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md and its plot")
    parser.add_argument(
        "--parts", action="store_true", help="only measure what each part of the state cache buys (a few minutes)"
    )
    args = parser.parse_args(argv)
    if args.parts:
        plan = QUICK if args.quick else FULL
        print(parts_table(measure_parts(_parts_sizes(plan), plan.repeats)))
        return 0

    results = run(quick=args.quick, published=not (args.quick or args.no_published))
    print(report.table(results))
    output = args.output or (None if args.quick else report.RESULTS_FILE)
    if output is not None:
        report.write_json(results, output)
        print(f"\nResults: {output}")
    if not (args.quick or args.no_docs):
        report.write_plot(results, report.PLOT_FILE)
        report.write_docs(results, report.DOCS_FILE, report.PLOT_FILE)
        if output == report.RESULTS_FILE:
            docs_pages.rewrite()  # the other pages' blocks quote the results file
        print(f"Docs: {report.DOCS_FILE}, {report.PLOT_FILE} and the pages quoting them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
