"""A local host in a process of its own that a test can kill and start again on the same state directory."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hosting import child_pythonpath, free_port

from agent_host._local_host.orchestration_store import OrchestrationStore
from agent_host._local_host.store import EntityStore

ROOT = Path(__file__).resolve().parents[2]
WEBHOOK = "/runtime/webhooks/durabletask"


class ServedProcess:
    """Runs `command` (a local host printing "Listening on") with its output in a file per start."""

    def __init__(
        self,
        workdir: Path,
        command: list[str],
        env: dict[str, str],
        *,
        app_dir: Path = ROOT / "tests",
        request_timeout: float = 30,
    ) -> None:
        """`app_dir` goes on the child's PYTHONPATH so `command` can import its test app from there."""
        self.workdir = workdir
        self.state_dir = workdir / "state"
        self.port = free_port()
        self.command = [part.format(port=self.port, state=self.state_dir) for part in command]
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI", "AGENT_HOST"))}
        self.env.update(env, PYTHONPATH=child_pythonpath(ROOT, app_dir))
        self.request_timeout = request_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.logs: list[Path] = []

    def start(self) -> None:
        log = self.workdir / f"host-{len(self.logs) + 1}.log"
        self.logs.append(log)
        with log.open("wb") as sink:
            self.process = subprocess.Popen(self.command, cwd=self.workdir, env=self.env, stdout=sink, stderr=sink)
        deadline = time.monotonic() + 60
        while "Listening on" not in log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the host did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: no graceful stop, nothing in flight gets committed."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)

    def wait_for_exit(self, timeout: float = 30) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.request_timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            connection.close()

    def status(self, instance_id: str) -> dict[str, Any]:
        _, body = self.request("GET", f"{WEBHOOK}/instances/{instance_id}?showHistory=true")
        return body

    def wait_until(self, instance_id: str, done: Any, timeout: float = 30) -> dict[str, Any]:
        """Poll the instance's status (with history) until `done(status)` holds."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(instance_id)
            if isinstance(status, dict) and status.get("instanceId") and done(status):
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"{instance_id} never got there; last status: {status}")
            time.sleep(0.05)

    def stored_history(self, instance_id: str) -> list[dict[str, Any]]:
        """The instance's history as stored, read from the database after the process stopped."""
        assert self.process is None or self.process.poll() is not None, "stop the host first"
        store = EntityStore(self.state_dir)
        try:
            return OrchestrationStore(store).history(instance_id)
        finally:
            store.close()


def serve_command(app: str = "local_host.served_orchestrations:app") -> list[str]:
    """`python -m agent_host serve` on a test app, the orchestration one unless `app` names another."""
    return [
        sys.executable,
        "-m",
        "agent_host",
        "serve",
        "--app",
        app,
        "--port",
        "{port}",
        "--state-dir",
        "{state}",
        "--log-level",
        "WARNING",
    ]


def crashing_command(die_at: str, marker: Path) -> list[str]:
    """The test app on a host that kills itself at `die_at` once (see `crashing_host`)."""
    return [
        sys.executable,
        "-m",
        "local_host.crashing_host",
        "--port",
        "{port}",
        "--state-dir",
        "{state}",
        "--die-at",
        die_at,
        "--marker",
        str(marker),
    ]
