"""docs/benchmarks.md carries the standalone benchmarks' latest figures, from their results files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.feature_figures import RESULTS_DIR, SECTIONS, feature_sections


def test_every_standalone_benchmark_with_results_gets_its_figures_on_the_page() -> None:
    page = feature_sections()

    for title, module, _, _ in SECTIONS:
        assert (RESULTS_DIR / f"{module}.json").exists(), module
        assert f"### {title}" in page
    workflows = json.loads((RESULTS_DIR / "workflow_cost.json").read_text())
    assert f"| {workflows[0]['hosted_per_superstep_ms']:.1f} |" in page
    streaming = json.loads((RESULTS_DIR / "streaming_cost.json").read_text())
    assert f"| {streaming['latency'][0]['p50_ms']:.1f} |" in page


def test_a_benchmark_never_run_has_no_section(tmp_path: Path) -> None:
    shutil.copy(RESULTS_DIR / "capacity.json", tmp_path / "capacity.json")

    page = feature_sections(tmp_path)

    assert [line for line in page.splitlines() if line.startswith("### ")] == ["### Capacity"]
