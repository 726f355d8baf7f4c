"""The orchestration benchmark's quick mode runs on the local host and reports every figure (no timing asserted)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from bench.orchestration_agents import main


def _is_figure(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def test_quick_orchestration_benchmark_reports_every_figure(tmp_path: Path, capsys) -> None:
    output = tmp_path / "orchestrations.json"

    assert main(["--quick", "--output", str(output)]) == 0

    results = json.loads(output.read_text())
    assert results["quick"] is True
    assert [row["steps"] for row in results["chains"]] == [1, 3]
    for row in results["chains"]:
        assert all(_is_figure(row[name]) for name in ("total_ms", "per_step_ms", "entity_turn_ms")), row
    for name in ("http_turn_ms", "step_over_http_turn", "fan_out_ms", "fan_out_per_call_ms"):
        assert _is_figure(results[name]), (name, results[name])
    assert (results["http_turns"], results["fan_out_calls"]) == (5, 3)
    assert "N-step agent chain" in capsys.readouterr().out
