"""Runs demo.http with a real .http client, the httpyac CLI, against the local host running function_app.py.

The client is pinned, with its whole dependency tree, in .tools/httpyac (package.json and package-lock.json);
tests/httpyac_client.py installs it there with `npm ci` when it is missing, and skips only where node or npm is missing.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from demo_replay import ROOT
from hosting import RunningHost
from httpyac_client import httpyac, send_http_file

__all__ = ["httpyac"]  # the fixture, imported for the test below


def test_httpyac_sends_every_request_of_demo_http_and_each_meets_its_expectation(
    tmp_path: Path, monkeypatch, httpyac: list[str]
) -> None:
    monkeypatch.chdir(ROOT)
    sys.modules.pop("function_app", None)
    running = RunningHost(lambda: importlib.import_module("function_app").app, tmp_path / "state", function_key="local")
    assert running.host is not None
    try:
        run = send_http_file(httpyac, ROOT / "demo.http", running.host.base_url, tmp_path / "client")
    finally:
        running.stop()

    assert run.changed == ["@host = http://127.0.0.1:7071"]
    assert len(run.sent) == len(run.requests), [item.get("title") or item.get("name") for item in run.sent]
    assert run.problems == []
    assert run.exit_code == 0, run.stderr
    assert f"runs all {len(run.requests)} requests unchanged" in run.text  # the header's claim
