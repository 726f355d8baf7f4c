"""Times turns through the published standalone worker, agent-framework-durabletask's `DurableAIAgentWorker` and
`DurableAIAgentClient`, on durabletask's in-memory backend: `python published_durabletask_driver.py TURNS MARKS`.

Runs with the python of the virtual environment that holds the published host (`bench/published.py`), never with
the project's: it imports neither `agent_host` nor the project's tests. Prints one JSON line, `{"rows": [...]}`,
summarized at each mark (a comma-separated list of turn counts) as `bench.durabletask_turns` summarizes ours.
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_framework import Agent

from bench.workload import AGENT_INSTRUCTIONS, AGENT_NAME, ZeroLatencyChatClient, user_message

# Each mark's p50 is over the turns just before it, at most this many.
WINDOW = 20


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def latency_rows(take_turn: Callable[[int], Any], turns: int, marks: Sequence[int]) -> list[dict[str, Any]]:
    """Take `turns` turns, timing each as its caller waits for it; at each mark, the p50 and max of the last ones."""
    seconds: list[float] = []
    rows = []
    for number in range(1, turns + 1):
        started = time.perf_counter()
        take_turn(number)
        seconds.append(time.perf_counter() - started)
        if number in marks:
            recent = sorted(seconds[-WINDOW:])
            rows.append(
                {
                    "turns": number,
                    "messages": 2 * number,
                    "p50_ms": statistics.median(recent) * 1000,
                    "max_ms": recent[-1] * 1000,
                }
            )
    return rows


def main(argv: list[str]) -> None:
    from agent_framework_durabletask import DurableAIAgentClient, DurableAIAgentWorker
    from durabletask.client import TaskHubGrpcClient
    from durabletask.testing import create_test_backend
    from durabletask.worker import TaskHubGrpcWorker

    turns, marks = int(argv[0]), [int(mark) for mark in argv[1].split(",")]
    port = free_port()
    backend = create_test_backend(port=port)
    worker = TaskHubGrpcWorker(host_address=f"localhost:{port}")
    DurableAIAgentWorker(worker).add_agent(Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME))
    worker.start()
    client = TaskHubGrpcClient(host_address=f"localhost:{port}")
    try:
        agent = DurableAIAgentClient(client).get_agent(AGENT_NAME)
        session = agent.create_session()
        rows = latency_rows(lambda number: agent.run(user_message(number), session=session), turns, marks)
    finally:
        client.close()
        worker.stop()
        backend.stop()
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1:])
