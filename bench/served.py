"""An app served by the local host for a benchmark, and timed HTTP calls to it.

Every end-to-end benchmark drives the app as a caller does: HTTP to the local host on loopback, in its own thread
and event loop, so the measuring thread never runs the host's work. One copy of that here keeps the benchmarks
measuring the same thing the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from azure.durable_functions.models.utils import http_utils

from agent_host import AgentFunctionApp
from agent_host._local_host import LocalHost

T = TypeVar("T")


class ServedApp:
    """`app` served by the local host on a free loopback port, in its own thread and event loop.

    Attributes:
        host: The local host (its store and schedulers, for benchmarks that count what they did).
        address: (host, port) to connect to.
    """

    def __init__(
        self,
        app: AgentFunctionApp,
        state_dir: Path,
        *,
        timeout: float = 300,
        name: str = "bench-host",
        invocation: str | None = None,
    ) -> None:
        """Start the host; `timeout` bounds each `call` (start and stop included), `name` names the thread,
        `invocation` who runs the functions (`worker`, `direct`; None: the host's default)."""
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self.host = LocalHost(app, state_dir=state_dir, port=0, invocation=invocation)
        self.call(self.host.start())
        url = urlsplit(self.host.base_url)
        self.address = (url.hostname or "127.0.0.1", url.port or 80)

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the host's loop (the host's objects belong to it) and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self._timeout)

    def stop(self) -> None:
        """Stop the host, then its loop and thread."""
        self.call(self.host.stop())
        # azure-functions-durable keeps one aiohttp session per process, bound to the loop that opened it.
        self.call(http_utils._close_session())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextlib.contextmanager
def posted(
    address: tuple[str, int], path: str, data: bytes, *, headers: Mapping[str, str] | None = None, timeout: float = 300
) -> Iterator[http.client.HTTPResponse]:
    """POST an encoded JSON body and yield the response unread, for a caller that reads it as it arrives (an event
    stream); the connection closes when the block ends. The body comes encoded so that a timed caller's clock
    starts after the encoding."""
    connection = http.client.HTTPConnection(*address, timeout=timeout)
    with contextlib.closing(connection):
        connection.request("POST", path, data, {"Content-Type": "application/json", **(headers or {})})
        yield connection.getresponse()


def timed_post(address: tuple[str, int], path: str, body: Any, *, timeout: float = 300) -> tuple[int, Any, float]:
    """POST a JSON body and read the whole answer; returns the status, the decoded answer (its text if it is not
    JSON, to show in an error) and the wall milliseconds from sending to the last byte read."""
    data = json.dumps(body).encode()
    started = time.perf_counter()
    with posted(address, path, data, timeout=timeout) as response:
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
    try:
        answer = json.loads(payload)
    except ValueError:
        answer = payload.decode("utf-8", "replace")
    return response.status, answer, elapsed


def waited_turn(
    address: tuple[str, int],
    agent: str,
    conversation: str,
    message: str,
    *,
    answered: Callable[[str], bool],
    timeout: float = 300,
) -> float:
    """POST one turn that waits for its answer (`"wait": true`) and return its wall milliseconds.

    Fails loudly unless the host answered 200 with a text `answered` accepts, so that no figure is ever taken
    from a turn that did not run as scripted.
    """
    path = f"/api/agents/{agent}/conversations/{conversation}/turns"
    status, answer, elapsed = timed_post(address, path, {"message": message, "wait": True}, timeout=timeout)
    text = answer.get("text") if isinstance(answer, dict) else None
    if status != 200 or not isinstance(text, str) or not answered(text):
        raise RuntimeError(f"A waited turn did not complete: HTTP {status} {str(answer)[:300]}")
    return elapsed
