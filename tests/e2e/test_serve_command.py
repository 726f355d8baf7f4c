"""`python -m agent_host serve` runs the template app: it says where it listens and which model answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from hosting import free_port

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_serve_runs_the_template_and_keeps_the_conversation_across_restarts(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "agent_host", "serve", "--port", str(port), "--state-dir", str(tmp_path)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI"))}
    base = f"http://127.0.0.1:{port}/api/agents/assistant/conversations/cli/turns"
    outputs = []
    exit_codes: list[int] = []
    for message in ["My name is Linus.", "What is my name?"]:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            banner = ""
            deadline = time.monotonic() + 60
            while "Listening on" not in banner and time.monotonic() < deadline:
                banner += process.stdout.readline()
            banner += process.stdout.readline()  # which code runs the functions
            outputs.append(banner)
            answer = post(base, {"message": message})
        finally:
            process.terminate()
            exit_codes.append(process.wait(30))
            process.stdout.close()

    assert f"Listening on http://127.0.0.1:{port}" in outputs[0]
    # One SIGTERM, one graceful stop: the worker's HTTP-streams server (uvicorn, under the worker invoker) does not
    # keep the signal for itself and raise it again, which the host would take for a second, immediate one.
    assert exit_codes == [0, 0]
    expected = "the Azure Functions Python worker's own code" if sys.version_info >= (3, 13) else "direct calls"
    assert f"Functions run through {expected}" in outputs[0]
    assert answer["text"] == "[offline model] Your name is Linus."
