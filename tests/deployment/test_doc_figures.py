"""Every measured figure a docs page quotes is what the benchmark's results file says: the pages cannot go stale.

docs/benchmarks.md is rendered whole from `bench/results/latest.json` (and the standalone benchmarks' files); the other
pages quote figures in blocks that `bench.feature_figures` renders from a results file. A page edited by hand, or
results rerun without `python -m bench.docs_pages`, fails here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from bicep_source import BicepFile, object_properties

from bench import report
from bench.docs_pages import rewrite
from bench.feature_figures import BLOCK, PAGE_BLOCKS, RESULTS_DIR, with_blocks_rendered
from bench.state_cache_memory import FLEX_CONSUMPTION_CACHE_MB

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_each_figures_block_of_a_page_is_what_its_results_file_renders(page: Path) -> None:
    text = page.read_text(encoding="utf-8")

    assert with_blocks_rendered(text) == text


def test_the_benchmarks_page_is_rendered_from_the_latest_results(tmp_path: Path) -> None:
    rendered = tmp_path / "benchmarks.md"
    report.write_docs(json.loads(report.RESULTS_FILE.read_text()), rendered, report.PLOT_FILE)

    assert rendered.read_text(encoding="utf-8") == report.DOCS_FILE.read_text(encoding="utf-8")


def test_every_block_is_quoted_by_a_page_and_every_quoted_block_exists() -> None:
    quoted = {match["name"] for page in PAGES for match in BLOCK.finditer(page.read_text(encoding="utf-8"))}

    assert quoted <= set(PAGE_BLOCKS)
    assert {"turn_costs", "capacity", "state_cache_estimate", "state_cache_rss", "state_cache_flex"} <= quoted


def test_a_rerun_benchmark_rewrites_the_figures_its_pages_quote(tmp_path: Path) -> None:
    # A changed results file changes the page's block (and nothing else on it): the check above can fail.
    results, docs = tmp_path / "results", tmp_path / "docs"
    shutil.copytree(RESULTS_DIR, results)
    shutil.copytree(ROOT / "docs", docs)
    capacity = json.loads((results / "capacity.json").read_text())
    capacity["loads"][0]["turns_per_second"] = 12345.6
    (results / "capacity.json").write_text(json.dumps(capacity))

    changed = rewrite(results, docs)

    scaling = (docs / "scaling.md").read_text(encoding="utf-8")
    assert "| 12345.6 |" in scaling
    assert docs / "scaling.md" in changed and docs / "benchmarks.md" in changed
    original = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    assert BLOCK.sub("", scaling) == BLOCK.sub("", original)


def test_the_deployment_sets_the_state_cache_bound_the_benchmark_measured_for_each_instance_size() -> None:
    bicep = BicepFile(ROOT / "infra" / "modules" / "functionapp.bicep")
    by_memory = {
        int(key.strip("'")): int(value.text.decode())
        for key, value in object_properties(bicep.value("stateCacheMBByInstanceMemory")).items()
    }
    main = (ROOT / "infra" / "main.bicep").read_text(encoding="utf-8")
    allowed = re.search(r"@allowed\(\[([\s\d]+)\]\)\s*param instanceMemoryMB int", main)
    measured = json.loads((RESULTS_DIR / "state_cache_memory.json").read_text())

    assert by_memory == FLEX_CONSUMPTION_CACHE_MB
    assert allowed is not None and sorted(by_memory) == [int(value) for value in allowed[1].split()]
    assert {int(memory): bound for memory, bound in measured["flex_consumption_cache_mb"].items()} == by_memory
    assert set(by_memory.values()) <= {worker["bound_mb"] for worker in measured["workers"]}
    peaks = {worker["bound_mb"]: worker["rounds"][-1]["peak_rss_mb"] for worker in measured["workers"]}
    # Each bound leaves at least half of its instance to the Functions host and the turns in flight.
    assert all(peaks[bound] <= memory / 2 for memory, bound in by_memory.items()), peaks
    assert re.search(
        r"AGENT_HOST_STATE_CACHE_MB: string\(stateCacheMBByInstanceMemory\[string\(instanceMemoryMB\)\]\)",
        (ROOT / "infra" / "modules" / "functionapp.bicep").read_text(encoding="utf-8"),
    )
