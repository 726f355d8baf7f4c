"""The command line and results file shared by the standalone benchmarks (`python -m bench.<name>`).

Each standalone benchmark prints its table and writes its figures as JSON for docs/benchmarks.md to quote. Writing
that file one way here keeps every results file in the same format (indented, newline-terminated, its folder made)
and every benchmark announcing where it went.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import docs_pages
from .feature_figures import RESULTS_DIR


def quick_parser(prog: str, description: str, quick_help: str, default_output: Path) -> argparse.ArgumentParser:
    """A parser with `--quick` (a tiny run that shows the benchmark still works) and `--output` (the results JSON).

    Returned rather than parsed so a benchmark can add options of its own before parsing.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--output", type=Path, default=default_output, help=f"results JSON (default {default_output})")
    return parser


def write_results(path: Path, results: Any) -> None:
    """Write `results` as indented JSON to `path`, making its folder, and say so on stderr (stdout holds the table).

    Results written to the repository's own results folder rewrite the docs that quote them (`docs_pages`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    if path.resolve().parent == RESULTS_DIR:
        for page in docs_pages.rewrite():
            print(f"rewrote {page}", file=sys.stderr)
