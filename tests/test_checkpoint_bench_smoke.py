"""`python -m bench.checkpoint_cost --quick` still measures everything (timings reported, never asserted on); the
structural claim it checks is the journal's write count: one write per model call, one per tool result, and one
delete by the conversation's next operation."""

from __future__ import annotations

import json
from pathlib import Path

from bench.checkpoint_cost import main


def test_the_checkpoint_benchmark_reports_writes_and_milliseconds_a_step(tmp_path: Path) -> None:
    output = tmp_path / "checkpoint_cost.json"

    assert main(["--quick", "--output", str(output)]) == 0

    figures = json.loads(output.read_text())
    for row in figures["writes"]:
        assert row["appends"] == row["model_calls"] + row["tools"]
        assert row["per_model_call"] == 1 and row["per_tool_call"] == 1 and row["deletes_next_operation"] == 1
    assert [row["store"] for row in figures["steps"]] == ["sqlite", "sqlite"]
    assert all(row["on_ms"] > 0 and row["replay_ms"] > 0 for row in figures["steps"])
