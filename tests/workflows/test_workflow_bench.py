"""The workflow benchmark runs end to end in a small configuration and reports every figure (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.workflow_cost import main


def test_the_workflow_benchmark_reports_per_superstep_figures_and_ratios(tmp_path: Path, capsys) -> None:
    output = tmp_path / "workflow_cost.json"

    assert main(["--repeats", "1", "--rounds", "3", "--output", str(output)]) == 0

    rows = json.loads(output.read_text())
    assert [row["shape"] for row in rows] == [
        "chain of 4 agents",
        "fan-out 2, fan-in activity",
        "writer-critic cycle, 3 rounds",
    ]
    assert [row["supersteps"] for row in rows] == [5, 3, 9]
    for row in rows:
        for name in ("in_process_ms", "hosted_ms", "in_process_per_superstep_ms", "hosted_per_superstep_ms"):
            assert row[name] > 0, (name, row)
        assert row["hosted_over_in_process"] == round(row["hosted_ms"] / row["in_process_ms"], 1)
    assert "hosted ms" in capsys.readouterr().out
