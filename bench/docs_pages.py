"""`python -m bench.docs_pages`: rewrite the docs from the results files, without measuring anything.

docs/benchmarks.md is rendered whole from `bench/results/latest.json` and the standalone benchmarks' files; every
other page's figures blocks (`feature_figures.PAGE_BLOCKS`) from the file each names. Every benchmark that writes
its results file calls this, so results and pages change together; tests/test_doc_figures.py checks they agree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import report
from .feature_figures import RESULTS_DIR, with_blocks_rendered

DOCS_DIR = report.ROOT / "docs"


def rewrite(results_dir: Path = RESULTS_DIR, docs_dir: Path = DOCS_DIR) -> list[Path]:
    """Rewrite docs/benchmarks.md and the figures blocks of the other pages; the pages that changed."""
    changed: list[Path] = []
    latest = results_dir / report.RESULTS_FILE.name
    if latest.exists():
        page = docs_dir / report.DOCS_FILE.name
        before = page.read_text(encoding="utf-8") if page.exists() else None
        report.write_docs(json.loads(latest.read_text()), page, report.PLOT_FILE, results_dir)
        if page.read_text(encoding="utf-8") != before:
            changed.append(page)
    for page in sorted(docs_dir.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        rendered = with_blocks_rendered(text, results_dir)
        if rendered != text:
            page.write_text(rendered, encoding="utf-8")
            changed.append(page)
    return changed


def main() -> int:
    for page in rewrite():
        print(f"rewrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
