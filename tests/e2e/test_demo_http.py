"""Replays every request of demo.http with our own replayer against the local host running function_app.py."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from demo_replay import ROOT, parse_http_file, replay_demo
from hosting import RunningHost


def test_every_request_in_demo_http_works_against_the_local_host(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    sys.modules.pop("function_app", None)
    running = RunningHost(lambda: importlib.import_module("function_app").app, tmp_path, function_key="local")
    try:
        replies = replay_demo(running)
    finally:
        running.stop()

    _, requests = parse_http_file(ROOT / "demo.http")
    assert len(replies) == len(requests) == 28
    started = replies["Start a turn without waiting: 202 and a Location to poll"].json()
    polled = next(reply.json() for title, reply in replies.items() if title.startswith("Poll the first turn"))
    assert started["status"] == "pending"
    assert polled["turnId"] == started["turnId"]
    assert polled["text"] == "[offline model] Your favourite color is teal."
