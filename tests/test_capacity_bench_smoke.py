"""`python -m bench.capacity --quick` runs and reports every load, with expiry on and off (never a timing assertion)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from bench.capacity import QUICK, main


def test_quick_capacity_reports_every_load_with_expiry_on_and_off(tmp_path: Path) -> None:
    output = tmp_path / "capacity.json"

    assert main(["--quick", "--output", str(output)]) == 0

    results = json.loads(output.read_text())
    loads = results["loads"]
    assert results["quick"] is True
    assert [(row["conversations"], row["expiry"]) for row in loads] == [
        (conversations, expiry) for conversations in QUICK.concurrency for expiry in ("14d", "off")
    ]
    for row in loads:
        assert row["turns"] == row["conversations"] * QUICK.turns_each[row["conversations"]]
        for name in ("turns_per_second", "p50_ms", "p95_ms", "cpu_ms_per_turn"):
            assert math.isfinite(row[name]) and row[name] > 0, (name, row)
        # One expiry orchestration per conversation (and the warm-up's) with expiry on, none with it off.
        assert row["expiry_orchestrations"] == (row["conversations"] + 1 if row["expiry"] == "14d" else 0)
