"""Waited-turn latency through the HTTP API on the local host, with a model that answers instantly.

The client posts `{"message", "wait": true}` and times the whole request: everything but the (zero) model time
is latency the host adds: signalling the entity, the entity's turn and commit, and the polling that reads the
answer back. Throughput runs many conversations at once, one client thread each.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_framework import Agent
from azure.durable_functions.models.utils import http_utils

from agent_host import AgentFunctionApp, HostSettings
from agent_host._local_host import LocalHost

from .workload import AGENT_INSTRUCTIONS, AGENT_NAME, ZeroLatencyChatClient, percentile, reply_to, user_message


@dataclass
class LatencyFigures:
    """Host-added latency of waited turns, and throughput with concurrent conversations."""

    sequential_turns: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    concurrent_conversations: int
    concurrent_turns: int
    turns_per_second: float
    concurrent_p50_ms: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _HostThread:
    """The local host serving our app on a free loopback port, in its own thread and event loop."""

    def __init__(self, state_dir: Path) -> None:
        app = AgentFunctionApp(
            agents=[Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)], settings=HostSettings()
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bench-local-host", daemon=True)
        self._thread.start()
        self.host = LocalHost(app, state_dir=state_dir, port=0)
        self._call(self.host.start())
        url = urlsplit(self.host.base_url)
        self.address = (url.hostname or "127.0.0.1", url.port or 80)

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(120)

    def stop(self) -> None:
        self._call(self.host.stop())
        # azure-functions-durable keeps one aiohttp session per process, bound to the loop that opened it.
        self._call(http_utils._close_session())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def waited_turn(address: tuple[str, int], conversation: str, turn: int) -> float:
    """Post one waited turn and return its wall time in milliseconds; fail unless the scripted answer came back."""
    message = user_message(turn)
    body = json.dumps({"message": message, "wait": True}).encode()
    connection = http.client.HTTPConnection(*address, timeout=120)
    with contextlib.closing(connection):
        start = time.perf_counter()
        connection.request(
            "POST",
            f"/api/agents/{AGENT_NAME}/conversations/{conversation}/turns",
            body=body,
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - start) * 1000
    answer = json.loads(payload)
    if response.status != 200 or answer.get("text") != reply_to(message):
        raise RuntimeError(f"A waited turn did not complete: HTTP {response.status} {payload[:300]!r}")
    return elapsed


def measure_latency(sequential_turns: int, conversations: int, turns_each: int) -> LatencyFigures:
    """Section 3: p50/p99 over `sequential_turns` turns of one conversation, then throughput of many at once."""
    with tempfile.TemporaryDirectory(prefix="agent-host-bench-") as state_dir:
        host = _HostThread(Path(state_dir))
        try:
            waited_turn(host.address, "warm-up", 1)
            sequential = [waited_turn(host.address, "sequential", turn) for turn in range(1, sequential_turns + 1)]

            def converse(index: int) -> list[float]:
                return [waited_turn(host.address, f"concurrent-{index}", turn) for turn in range(1, turns_each + 1)]

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=conversations) as pool:
                concurrent = [ms for result in pool.map(converse, range(conversations)) for ms in result]
            elapsed = time.perf_counter() - started
        finally:
            host.stop()
    return LatencyFigures(
        sequential_turns=len(sequential),
        p50_ms=percentile(sequential, 0.50),
        p99_ms=percentile(sequential, 0.99),
        mean_ms=sum(sequential) / len(sequential),
        concurrent_conversations=conversations,
        concurrent_turns=len(concurrent),
        turns_per_second=len(concurrent) / elapsed,
        concurrent_p50_ms=percentile(concurrent, 0.50),
    )
