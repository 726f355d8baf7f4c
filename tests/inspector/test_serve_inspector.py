"""`python -m agent_host serve` serves the inspector unless AGENT_HOST_INSPECTOR turns it off."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hosting import free_port

from agent_host._inspector.settings import INSPECTOR_SETTING

ROOT = Path(__file__).resolve().parents[2]


def serve_and_get(state_dir: Path, setting: str | None) -> tuple[str, int, bytes]:
    """Run serve with the setting (None: unset), read its banner, GET /api/inspector; the banner, status and body."""
    port = free_port()
    command = [sys.executable, "-m", "agent_host", "serve", "--port", str(port), "--state-dir", str(state_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI", INSPECTOR_SETTING))}
    if setting is not None:
        env[INSPECTOR_SETTING] = setting
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        banner = ""
        deadline = time.monotonic() + 60
        while "HTTP routes:" not in banner and time.monotonic() < deadline and process.poll() is None:
            banner += process.stdout.readline()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/inspector", timeout=30) as response:
                return banner, response.status, response.read()
        except urllib.error.HTTPError as error:
            return banner, error.code, error.read()
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()


@pytest.mark.parametrize("setting", [None, ""], ids=["unset", "empty-as-in-the-template"])
def test_serve_turns_the_inspector_on_by_default(tmp_path: Path, setting: str | None) -> None:
    banner, status, body = serve_and_get(tmp_path, setting)

    assert "Inspector: open /api/inspector in a browser" in banner
    assert status == 200 and b"<title>agent-host inspector</title>" in body


def test_serve_leaves_it_off_when_the_setting_says_so(tmp_path: Path) -> None:
    banner, status, body = serve_and_get(tmp_path, "0")

    assert "Inspector" not in banner
    assert status == 404 and b'"not_found"' in body
