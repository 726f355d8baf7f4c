"""Each function app sample's README gives the command that serves it from the sample's folder: that command, as
written, serves. (samples/container_apps_dts is no function app: tests/deployment/test_container_apps_sample.py runs
its worker command.)

The command is run by bash in the sample's folder, as a reader pastes it, with only a free port and a temporary
state folder added; the test waits for the local host's health route to answer, then stops it and reads what it
printed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from hosting import free_port

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(path.parent for path in (ROOT / "samples").glob("*/function_app.py"))
MODEL_SETTINGS = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
_BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
STARTUP_SECONDS = 60


def serve_command(readme: Path) -> str:
    """The README's one command line that runs `python -m agent_host serve`."""
    lines = [
        line.strip()
        for block in _BASH_BLOCK.findall(readme.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if "-m agent_host serve" in line
    ]
    assert len(lines) == 1, f"{readme} should give one serve command, gives {lines}"
    return lines[0]


def health(port: int) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
            return json.loads(response.read())
    except OSError:
        return None


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.name)
def test_the_readme_command_serves_the_sample_from_its_folder(sample: Path, tmp_path: Path) -> None:
    command = serve_command(sample / "README.md")
    if not (sample / "../../.venv/bin/python").exists():  # tests run from another environment: use its python
        command = command.replace("../../.venv/bin/python", sys.executable)
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key not in MODEL_SETTINGS}
    process = subprocess.Popen(
        ["bash", "-c", f"{command} --port {port} --state-dir {tmp_path / 'state'}"],
        cwd=sample,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        answer = None
        while answer is None and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            answer = health(port)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        output = process.communicate(timeout=30)[0].decode(errors="replace")

    assert answer is not None, f"{command} did not serve:\n{output[-3000:]}"
    assert answer["status"] == "healthy"
    assert f"Listening on http://127.0.0.1:{port}" in output
    assert "HTTP routes:" in output
