"""Turns through the standalone worker: AgentClient to an AgentWorker over durabletask's in-memory backend.

Measures a turn's latency as the caller sees it (send to answer, zero-latency model) as the conversation grows, the
backend's own round trip (a trivial entity operation, signal to state read back), how many turns run at once with
slow model calls under the SDK's default thread pool and under `worker_options()`, and (full run only) the same
turns through the published worker, agent-framework-durabletask, on the same kind of backend.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent_framework import Agent, BaseChatClient, ChatResponse, Message
from durabletask.client import TaskHubGrpcClient
from durabletask.entities import EntityContext, EntityInstanceId
from durabletask.testing import create_test_backend
from durabletask.worker import TaskHubGrpcWorker

from agent_host import HostSettings
from agent_host.worker import AgentClient, AgentStateConverter, AgentWorker, worker_options

from .feature_figures import RESULTS_DIR
from .published import PUBLISHED_VERSION, PublishedHostUnavailableError, ensure_published_venv
from .published_durabletask_driver import free_port, latency_rows
from .report import machine
from .standalone import quick_parser, write_results
from .workload import AGENT_INSTRUCTIONS, AGENT_NAME, ZeroLatencyChatClient, user_message

RESULTS_FILE = RESULTS_DIR / "durabletask_turns.json"
PUBLISHED_DRIVER = Path(__file__).with_name("published_durabletask_driver.py")
PUBLISHED_TIMEOUT_SECONDS = 600
# The published client sleeps a second before each read: its run is timed over fewer turns.
PUBLISHED_MARKS = (1, 20)
SLOW_MODEL_SECONDS = 0.5
CONCURRENT_CONVERSATIONS = 24


class SlowChatClient(BaseChatClient[Any]):
    """A model call that waits on the network for a fixed time and then answers (it holds no CPU)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        await asyncio.sleep(self.seconds)
        return ChatResponse(messages=[Message("assistant", ["done"])])


# The backend's own round trip is milliseconds: a wait this long means it stopped answering.
ECHO_TIMEOUT_SECONDS = 30.0


@contextmanager
def _worker(address: str, agent: Agent, options: dict[str, Any]) -> Iterator[TaskHubGrpcWorker]:
    worker = TaskHubGrpcWorker(host_address=address, **options)
    AgentWorker(worker, [agent], settings=HostSettings())
    worker.add_entity(_echo, name="echo")
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


def _echo(context: EntityContext, value: Any) -> None:
    context.set_state(value)


def _latency(client: AgentClient, raw: TaskHubGrpcClient, turns: int, marks: Sequence[int]) -> dict[str, Any]:
    """Per-turn milliseconds over one conversation at each mark, and the backend's own round trip."""
    conversation = client.conversation(AGENT_NAME, "latency")
    rows = latency_rows(lambda number: conversation.send(user_message(number)), turns, marks)
    floor = []
    for number in range(20):
        entity = EntityInstanceId("echo", f"e{number}")
        started = time.perf_counter()
        raw.signal_entity(entity, "set", number + 1)
        while (metadata := raw.get_entity(entity)) is None or not metadata.get_state():
            if time.perf_counter() - started > ECHO_TIMEOUT_SECONDS:
                raise TimeoutError(f"the echo entity {entity} got no state in {ECHO_TIMEOUT_SECONDS:.0f} s")
            time.sleep(0.001)
        floor.append(time.perf_counter() - started)
    return {"rows": rows, "entity_round_trip_p50_ms": statistics.median(floor) * 1000}


def _published(turns: int, marks: Sequence[int]) -> dict[str, Any]:
    """The same turns through agent-framework-durabletask's worker and client, in its own virtual environment."""
    try:
        python = ensure_published_venv()
        done = subprocess.run(
            [str(python), str(PUBLISHED_DRIVER), str(turns), ",".join(map(str, marks))],
            capture_output=True,
            text=True,
            timeout=PUBLISHED_TIMEOUT_SECONDS,
            check=True,
        )
    except PublishedHostUnavailableError as exc:
        return {"unavailable": str(exc)}
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return {"unavailable": f"its driver failed: {str(exc.stderr or exc)[-400:]}"}
    return {"version": PUBLISHED_VERSION, **json.loads(done.stdout.strip().splitlines()[-1])}


def _concurrency(address: str, options: dict[str, Any], conversations: int, seconds: float) -> dict[str, Any]:
    """`conversations` turns sent at once, each a model call of `seconds`: wall time, and turns a second."""
    agent = Agent(SlowChatClient(seconds), AGENT_INSTRUCTIONS, name=AGENT_NAME)
    raw = TaskHubGrpcClient(host_address=address)
    client = AgentClient(raw, settings=HostSettings())
    with _worker(address, agent, options) as worker, ThreadPoolExecutor(conversations) as senders:
        started = time.perf_counter()
        answers = list(
            senders.map(lambda n: client.conversation(AGENT_NAME, f"load-{n}").send("go"), range(conversations))
        )
        wall = time.perf_counter() - started
        threads = worker.concurrency_options.maximum_thread_pool_workers
    raw.close()
    assert all(answer["status"] == "completed" for answer in answers), answers
    return {"threads": threads, "wall_seconds": wall, "turns_per_second": conversations / wall}


def measure(turns: int, marks: Sequence[int], conversations: int, seconds: float, *, published: bool) -> dict[str, Any]:
    port = free_port()
    backend = create_test_backend(port=port)
    address = f"localhost:{port}"
    try:
        raw = TaskHubGrpcClient(host_address=address)
        agent = Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)
        with _worker(address, agent, worker_options()):
            latency = _latency(AgentClient(raw, settings=HostSettings()), raw, turns, marks)
        raw.close()
        backend.reset()
        pools = {
            "sdk_default": _concurrency(address, {"data_converter": AgentStateConverter()}, conversations, seconds),
            "worker_options": _concurrency(address, worker_options(), conversations, seconds),
        }
    finally:
        backend.stop()
    results = {"latency": latency, "concurrency": {"conversations": conversations, "model_seconds": seconds, **pools}}
    if published:
        results["published"] = _published(max(PUBLISHED_MARKS), PUBLISHED_MARKS)
    return results


def table(results: dict[str, Any]) -> str:
    latency, load = results["latency"], results["concurrency"]
    lines = [f"{'turns':>6} {'messages':>9} {'p50 ms':>8} {'max ms':>8}"]
    lines += [f"{r['turns']:>6} {r['messages']:>9} {r['p50_ms']:>8.1f} {r['max_ms']:>8.1f}" for r in latency["rows"]]
    lines.append(f"trivial entity operation round trip p50 {latency['entity_round_trip_p50_ms']:.1f} ms")
    published = results.get("published")
    if published is not None:
        rows = published.get("rows") or []
        lines += [f"published, {r['turns']:>3} turns: p50 {r['p50_ms']:.1f} ms, max {r['max_ms']:.1f} ms" for r in rows]
        if "unavailable" in published:
            lines.append(f"published: not measured ({published['unavailable']})")
    for name in ("sdk_default", "worker_options"):
        pool = load[name]
        lines.append(
            f"{name:<15} {pool['threads']:>3} threads: {load['conversations']} turns of {load['model_seconds']:g} s in "
            f"{pool['wall_seconds']:.2f} s ({pool['turns_per_second']:.1f} turns/s)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, write the JSON results."""
    parser = quick_parser(
        "python -m bench.durabletask_turns", __doc__.splitlines()[0], "a few turns: shows that it works", RESULTS_FILE
    )
    args = parser.parse_args(argv)
    if args.quick:
        figures = measure(turns=4, marks=(2, 4), conversations=4, seconds=0.05, published=False)
    else:
        figures = measure(
            turns=200,
            marks=(1, 20, 100, 200),
            conversations=CONCURRENT_CONVERSATIONS,
            seconds=SLOW_MODEL_SECONDS,
            published=True,
        )
    results = {"quick": args.quick, "machine": machine(), "python": sys.version.split()[0], **figures}
    print(table(results))
    write_results(args.output, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
