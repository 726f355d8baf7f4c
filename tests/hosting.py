"""A local host on 127.0.0.1 running in its own thread and event loop, restartable, with a small HTTP client; free
ports and `serve` processes for tests that start their own."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from azure.durable_functions.models.utils import http_utils

from agent_host._local_host import DEFAULT_MAX_BATCH_SIZE, LocalHost
from agent_host._owners import FUNCTION_KEY_HEADER

T = TypeVar("T")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class SendsRequests(Protocol):
    """A host the tests send HTTP requests to (`RunningHost`, `front_doors.MemoryFunctionApp`)."""

    def request(self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None) -> Reply:
        """One request; the reply."""
        ...


def stored_messages(
    host: SendsRequests, agent: str, conversation_id: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The conversation's messages as `GET .../messages` gives them (asserting it answered 200)."""
    reply = host.request("GET", f"/api/agents/{agent}/conversations/{conversation_id}/messages", headers=headers)
    assert reply.status == 200, reply.body
    return list(reply.json()["messages"])


class RunningHost:
    """Runs `LocalHost` for an app built by `app_factory`; `restart()` builds a fresh app on the same state dir."""

    # Where a request presents the admin key (`AGENT_HOST_ADMIN_KEY`) when conversations have owners: the function key.
    admin_key_header = FUNCTION_KEY_HEADER

    def __init__(
        self,
        app_factory: Callable[[], Any],
        state_dir: Path,
        function_key: str | None = None,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        *,
        invocation: str | None = None,
    ) -> None:
        """`invocation` picks who runs the functions (`worker`, `direct`); None leaves it to the host's default."""
        self.app_factory = app_factory
        self.state_dir = state_dir
        self.function_key = function_key
        self.max_batch_size = max_batch_size
        self.invocation = invocation
        self.host: LocalHost | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.start()

    def start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.host = LocalHost(self.app_factory(), state_dir=self.state_dir, port=0, **self.host_options())
        self.before_start(self.host)
        self.call(self.host.start())

    def host_options(self) -> dict[str, Any]:
        """`LocalHost` arguments beyond the app, the state directory and the port."""
        return {"function_key": self.function_key, "max_batch_size": self.max_batch_size, "invocation": self.invocation}

    def before_start(self, host: LocalHost) -> None:
        """Change the host before it starts listening (nothing here; subclasses instrument it)."""

    def call(self, coroutine: Any, timeout: float = 60) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def stop(self) -> None:
        if self.host is None or self._loop is None:
            return
        self.call(self.host.stop())
        # azure-functions-durable keeps one aiohttp session bound to the first loop: close it with this loop.
        self.call(http_utils._close_session())
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(10)
        self._loop.close()
        self.host = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def wait_idle(self, timeout: float = 30) -> None:
        assert self.host is not None
        self.call(self.host.scheduler.wait_idle(timeout), timeout + 5)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        assert self.host is not None
        return request_at(self.host.base_url, method, path, body, headers=headers, raw=raw)


def request_at(
    base_url: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Reply:
    """One HTTP request to the server at `base_url`: `body` sent as JSON, or `raw` bytes as they are."""
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    data, sent_headers = encoded_request(body, headers, raw)
    connection.request(method, path, body=data, headers=sent_headers)
    response = connection.getresponse()
    reply = Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    connection.close()
    return reply


def encoded_request(
    body: Any, headers: dict[str, str] | None, raw: bytes | None
) -> tuple[bytes | None, dict[str, str]]:
    """A test request's bytes and headers: `body` as JSON (with its content type unless one is given), or `raw`."""
    sent_headers = dict(headers or {})
    if body is None:
        return raw, sent_headers
    sent_headers.setdefault("Content-Type", "application/json")
    return json.dumps(body).encode(), sent_headers


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(
    cwd: Path, port: int, state_dir: Path, env: dict[str, str], *, until: str = "Listening on"
) -> subprocess.Popen[str]:
    """Start `python -m agent_host serve` in `cwd` and read its banner until a line holds `until`."""
    return start_command(cwd, ["serve", "--port", str(port), "--state-dir", str(state_dir)], env, until=until)


def start_command(
    cwd: Path, arguments: list[str], env: dict[str, str], *, until: str = "Listening on"
) -> subprocess.Popen[str]:
    """Start `python -m agent_host <arguments>` in `cwd` and read its output until a line holds `until`."""
    command = [sys.executable, "-m", "agent_host", *arguments]
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    banner = ""
    deadline = time.monotonic() + 60
    while until not in banner and time.monotonic() < deadline and process.poll() is None:
        banner += process.stdout.readline()
    assert until in banner, banner
    return process


def stop_serve(process: subprocess.Popen[str], how: int = signal.SIGTERM) -> None:
    """Stop a serve process (SIGKILL: no cleanup at all) and close its output."""
    process.send_signal(how)
    process.wait(30)
    assert process.stdout is not None
    process.stdout.close()


def command_environment(root: Path, **settings: str) -> dict[str, str]:
    """The environment for a child `python -m agent_host ...`: this one without the developer's model and host
    settings, `root` importable, then `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_"))}
    env["PYTHONPATH"] = child_pythonpath(root)
    env.update(settings)
    return env


def run_command(cwd: Path, arguments: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `python -m agent_host <arguments>` in `cwd` until it exits (cases that end at startup)."""
    command = [sys.executable, "-m", "agent_host", *arguments]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def only_stderr_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a command printed on stderr; it exited 1 and printed nothing else (no traceback)."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def child_pythonpath(*paths: Path) -> str:
    """PYTHONPATH for a child `python`: `paths` first, then this process's own (which may shift the clock)."""
    inherited = [part for part in os.environ.get("PYTHONPATH", "").split(os.pathsep) if part]
    return os.pathsep.join([*(str(path) for path in paths), *inherited])


def run_on_fresh_loop(make_coro: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on a fresh event loop, then close the durable client's session bound to that loop."""

    async def main() -> T:
        try:
            return await make_coro()
        finally:
            await http_utils._close_session()

    return asyncio.run(main())
