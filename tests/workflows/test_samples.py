"""samples/workflows: its workflows.http, replayed with our replayer and sent by a real .http client (httpyac),
against the local host running its function_app.py with the offline model."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from demo_replay import ROOT, parse_http_file, replay_demo
from hosting import RunningHost
from httpyac_client import httpyac, send_http_file

SAMPLE = ROOT / "samples" / "workflows"
HTTP_FILE = SAMPLE / "workflows.http"

__all__ = ["httpyac"]  # the fixture, imported for the test below


def sample_host(state_dir: Path, monkeypatch: Any) -> RunningHost:
    monkeypatch.syspath_prepend(str(SAMPLE))
    sys.modules.pop("function_app", None)
    return RunningHost(lambda: importlib.import_module("function_app").app, state_dir, function_key="local")


def test_every_request_of_the_sample_http_file_works_against_the_local_host(tmp_path: Path, monkeypatch: Any) -> None:
    running = sample_host(tmp_path, monkeypatch)
    try:
        replies = replay_demo(running, path=HTTP_FILE)
    finally:
        running.stop()
        sys.modules.pop("function_app", None)

    _, requests = parse_http_file(HTTP_FILE)
    completed = replies["The run completes with the tool's result"].json()
    assert len(replies) == len(requests) == 14
    assert completed["status"] == "completed"
    assert completed["outputs"][0]["messages"][-1]["contents"][0]["text"].startswith(
        "[offline model] The tool returned: Published: [offline model]"
    )


def test_httpyac_sends_every_request_of_the_sample_http_file_unchanged(
    tmp_path: Path, monkeypatch: Any, httpyac: list[str]
) -> None:
    running = sample_host(tmp_path / "state", monkeypatch)
    assert running.host is not None
    try:
        run = send_http_file(httpyac, HTTP_FILE, running.host.base_url, tmp_path / "client")
    finally:
        running.stop()
        sys.modules.pop("function_app", None)

    assert len(run.sent) == len(run.requests)
    assert run.problems == []
    assert run.exit_code == 0, run.stderr
