"""The benchmark's quick mode runs in-process and reports every figure (never a timing assertion)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from bench.__main__ import main
from bench.parts import PARTS
from bench.report import TARGETS

PUBLISHED_ONLY = {"published_ms", "published_floor_ms", "published_state_bytes", "published_over_its_floor"}


def _is_figure(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def test_quick_benchmark_reports_every_figure(tmp_path: Path, capsys) -> None:
    output = tmp_path / "quick.json"

    assert main(["--quick", "--output", str(output)]) == 0

    results = json.loads(output.read_text())
    assert results["quick"] is True
    assert results["published_status"] == "skipped (quick mode)"
    assert [row["messages"] for row in results["turn_cost"]] == [20, 60]
    for row in results["turn_cost"]:
        for name in (
            "state_bytes",
            "transcript_bytes",
            "floor_ms",
            "ours_cold_ms",
            "ours_warm_ms",
            "core_alone_ms",
            "core_restored_ms",
            "core_copies_ms",
        ):
            assert _is_figure(row[name]), (name, row[name])
        for name in (
            "ours_cold_over_floor",
            "ours_warm_over_floor",
            "core_alone_over_floor",
            "core_copies_over_floor",
            "core_restored_over_core",
            "ours_cold_over_core_restored",
        ):
            assert _is_figure(row[name]), (name, row[name])
        assert all(row[name] is None for name in PUBLISHED_ONLY | {"published_over_ours_warm"})
    for size in results["bytes_per_message"]["sizes"]:
        assert _is_figure(size["ours_state"]) and _is_figure(size["ours_transcript"])
    http = results["http"]
    assert http["sequential_turns"] == 20 and http["concurrent_turns"] == 12
    for name in ("p50_ms", "p99_ms", "mean_ms", "turns_per_second", "concurrent_p50_ms"):
        assert _is_figure(http[name]), (name, http[name])
    retention = results["retention"]
    assert retention["early"]["turns"] == 10 and retention["late"]["turns"] == 40
    assert retention["evicted_messages"] > 0  # the small budget made `auto` evict: the late turn ran on a sawtooth
    for name in ("ratio_warm", "ratio_cold", "ratio_mean", "early_amortized_ms", "late_amortized_ms"):
        assert _is_figure(retention[name]), (name, retention[name])
    assert [target["target"] for target in results["targets"]] == [name for name, *_ in TARGETS]
    assert [row["messages"] for row in results["parts"]] == [20, 60]
    for row in results["parts"]:
        assert _is_figure(row["cold_ms"]) and _is_figure(row["warm_ms"])
        assert sorted(row["parts"]) == sorted(PARTS)
        assert all(_is_figure(ratio) for modes in row["parts"].values() for ratio in modes.values())
    printed = capsys.readouterr().out
    assert "Per-turn host cost" in printed and "Targets" in printed
    assert "Cold turns against core's own run" in printed
    assert "What each part of the state cache buys" in printed
