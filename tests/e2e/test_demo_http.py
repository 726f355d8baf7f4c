"""Replays every request of demo.http against the local host running the template's function_app.py."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from demo_replay import ROOT, replay_demo
from hosting import RunningHost


def test_every_request_in_demo_http_works_against_the_local_host(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    sys.modules.pop("function_app", None)
    running = RunningHost(lambda: importlib.import_module("function_app").app, tmp_path, function_key="local")
    try:
        replies = replay_demo(running)
    finally:
        running.stop()

    assert len(replies) >= 12
    assert json.loads(replies["Start a turn without waiting: 202 and a Location to poll"].body)["status"] == "pending"
