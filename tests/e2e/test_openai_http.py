"""Sends every request of openai.http against the local host running function_app.py: with our own replayer, and
with a real .http client, the pinned httpyac CLI (as demo.http is sent; tests/httpyac_client.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from demo_replay import ROOT, parse_http_file, replay_demo
from hosting import RunningHost
from httpyac_client import httpyac, send_http_file

__all__ = ["httpyac"]  # the fixture, imported for the test below

OPENAI_HTTP = ROOT / "openai.http"


def template_host(state_dir: Path) -> RunningHost:
    sys.modules.pop("function_app", None)
    return RunningHost(lambda: importlib.import_module("function_app").app, state_dir, function_key="local")


def test_every_request_in_openai_http_works_against_the_local_host(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    running = template_host(tmp_path)
    try:
        replies = replay_demo(running, path=OPENAI_HTTP)
    finally:
        running.stop()

    _, requests = parse_http_file(OPENAI_HTTP)
    assert len(replies) == len(requests) == 12
    recalled = replies["Continue it with previous_response_id: the answer comes from durable history"].json()
    assert recalled["output"][0]["content"][0]["text"] == "[offline model] Your name is Ada."


def test_httpyac_sends_every_request_of_openai_http_and_each_meets_its_expectation(
    tmp_path: Path, monkeypatch, httpyac: list[str]
) -> None:
    monkeypatch.chdir(ROOT)
    running = template_host(tmp_path / "state")
    assert running.host is not None
    try:
        run = send_http_file(httpyac, OPENAI_HTTP, running.host.base_url, tmp_path / "client")
    finally:
        running.stop()

    assert run.changed == ["@host = http://127.0.0.1:7071"]
    assert len(run.sent) == len(run.requests), [item.get("title") or item.get("name") for item in run.sent]
    assert run.problems == []
    assert run.exit_code == 0, run.stderr
    assert f"runs all {len(run.requests)} requests unchanged" in run.text  # the header's claim
