"""Waited-turn latency through the HTTP API on the local host, with a model that answers instantly.

The client posts `{"message", "wait": true}` and times the whole request: everything but the (zero) model time
is latency the host adds: signalling the entity, the entity's turn and commit, and the polling that reads the
answer back. Throughput runs many conversations at once, one client thread each.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_framework import Agent

from agent_host import AgentFunctionApp, HostSettings

from .served import ServedApp, waited_turn
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


def scripted_turn(address: tuple[str, int], conversation: str, turn: int) -> float:
    """One waited turn to the zero-latency agent; its wall milliseconds, once its scripted answer came back."""
    message = user_message(turn)
    return waited_turn(
        address, AGENT_NAME, conversation, message, answered=lambda text: text == reply_to(message), timeout=120
    )


def measure_latency(sequential_turns: int, conversations: int, turns_each: int) -> LatencyFigures:
    """Section 3: p50/p99 over `sequential_turns` turns of one conversation, then throughput of many at once."""
    with tempfile.TemporaryDirectory(prefix="agent-host-bench-") as state_dir:
        app = AgentFunctionApp(
            agents=[Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)], settings=HostSettings()
        )
        host = ServedApp(app, Path(state_dir), timeout=120, name="bench-local-host")
        try:
            scripted_turn(host.address, "warm-up", 1)
            sequential = [scripted_turn(host.address, "sequential", turn) for turn in range(1, sequential_turns + 1)]

            def converse(index: int) -> list[float]:
                return [scripted_turn(host.address, f"concurrent-{index}", turn) for turn in range(1, turns_each + 1)]

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
