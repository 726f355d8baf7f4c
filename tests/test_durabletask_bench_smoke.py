"""The standalone worker benchmark's quick run measures every figure it reports (never a timing assertion)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.durabletask_turns import main


def test_quick_standalone_worker_benchmark_reports_latency_and_both_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--quick", "--output", str(tmp_path / "turns.json")]) == 0

    written = json.loads((tmp_path / "turns.json").read_text())
    assert written["quick"] is True
    assert [row["turns"] for row in written["latency"]["rows"]] == [2, 4]
    assert all(row["p50_ms"] > 0 for row in written["latency"]["rows"])
    pools = written["concurrency"]
    assert pools["worker_options"]["threads"] == 32 and pools["sdk_default"]["threads"] > 0
    assert "turns/s" in capsys.readouterr().out
