"""`python -m bench.streaming_cost --quick` still measures everything (figures reported, never asserted on as
timings); the one structural claim it checks is that storage writes follow the answer's duration, not its length."""

from __future__ import annotations

import json
from pathlib import Path

from bench.streaming_cost import main


def test_the_streaming_benchmark_reports_latency_writes_and_cost(tmp_path: Path) -> None:
    output = tmp_path / "streaming.json"

    assert main(["--quick", "--json", str(output)]) == 0

    figures = json.loads(output.read_text())
    assert [row["streams"] for row in figures["latency"]] == [1, 20]
    assert all(row["samples"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0 for row in figures["latency"])
    assert [row["words"] for row in figures["writes"]] == [10, 100]
    assert all(row["writes"] <= row["bound"] for row in figures["writes"])
    assert figures["writes"][1]["writes"] < figures["writes"][1]["words"] / 4
    assert figures["cost"]["streamed_cpu_ms"] > 0 and figures["cost"]["waited_cpu_ms"] > 0
