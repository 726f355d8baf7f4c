"""The worker-mode benchmark's quick run measures both modes and prints every figure (never a timing assertion)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_host._local_host.invocation import worker_unavailable_reason
from bench.worker_invocation import main

pytestmark = pytest.mark.skipif(worker_unavailable_reason() is not None, reason="the worker invoker needs 3.13+")


def test_quick_worker_benchmark_reports_both_modes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--output", str(tmp_path / "worker.json")]) == 0

    rows = {
        match.group(1).strip(): (float(match.group(2)), float(match.group(3)))
        for match in re.finditer(
            r"^([A-Za-z][A-Za-z ]*?) +([\d.]+) +([\d.]+) +[+-][\d.]+$", capsys.readouterr().out, re.M
        )
    }
    assert set(rows) == {"trivial HTTP call", "trivial entity operation", "agent turn"}
    assert all(direct > 0 and worker > 0 for direct, worker in rows.values())
    written = json.loads((tmp_path / "worker.json").read_text())
    assert written["quick"] is True and set(written["worker"]) == {"http_ms", "entity_ms", "agent_turn_ms"}
