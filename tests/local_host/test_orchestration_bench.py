"""The orchestration cost benchmark's quick mode runs and reports every figure (never a timing assertion)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.orchestration_cost import QUICK_EPISODE_SIZES, QUICK_WHOLE_RUN_SIZES, main


def _is_figure(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def test_quick_orchestration_benchmark_reports_every_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "orchestrations.json"

    assert main(["--quick", "--output", str(output)]) == 0

    figures = json.loads(output.read_text())
    assert [row["steps"] for row in figures["episodes"]] == list(QUICK_EPISODE_SIZES)
    for row in figures["episodes"]:
        assert row["events"] == 4 * row["steps"] + 2  # one episode per finished activity, plus this one's two
        for name in ("history_bytes", "floor_ms", "sdk_replay_ms", "host_episode_ms", "host_over_floor"):
            assert _is_figure(row[name]), (name, row[name])
        # Two medians of separate runs: in a quick run of a few repeats noise can put the SDK's part above the whole.
        assert _is_figure(row["sdk_share"])
    assert [(row["steps"], row["episodes"]) for row in figures["runs"]] == [(n, n + 1) for n in QUICK_WHOLE_RUN_SIZES]
    assert all(_is_figure(value) for value in figures["episode_growth"].values())
    assert _is_figure(figures["run_growth"]["total_ratio"])
    printed = capsys.readouterr().out
    assert "One episode after N finished activities" in printed and "the total grows as N^" in printed
