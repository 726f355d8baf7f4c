"""`python -m bench.worker_invocation`: what running each function through the Python worker's own code costs.

The same apps on the local host, once with direct calls and once with the worker invoker (azure-functions-runtime,
Python 3.13+), in the same run: a trivial classic HTTP function timed through the whole host (request to last byte),
a trivial entity operation and an agent's turn timed at the entity function the scheduler calls (one batch of one
operation, decoded, run and encoded). The figures are medians; the cost of the worker mode is the difference.
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from agent_framework import Agent

from agent_host import AgentFunctionApp, HostSettings
from agent_host._contract import RUN_OPERATION
from agent_host._local_host.invocation import worker_unavailable_reason
from agent_host._local_host.scheduler import entity_batch_json, signal_body

from .feature_figures import WORKER_CALLS
from .report import machine
from .served import ServedApp
from .standalone import quick_parser, write_results
from .workload import AGENT_INSTRUCTIONS, AGENT_NAME, ZeroLatencyChatClient

MODES = ("direct", "worker")
RESULTS_FILE = Path(__file__).resolve().parent / "results" / "worker_invocation.json"


def trivial_app() -> df.DFApp:
    """One HTTP function answering "ok" and one entity adding to a counter: nothing to time but the invocation."""
    app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="ping", methods=["GET"])
    def ping(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("ok")

    @app.entity_trigger(context_name="context")
    def counter(context: df.DurableEntityContext) -> None:
        context.set_state((context.get_state(lambda: 0) or 0) + context.get_input())

    return app


def agent_app() -> AgentFunctionApp:
    agent = Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)
    return AgentFunctionApp(agents=[agent], settings=HostSettings())


def median_ms(run: Callable[[], Any], repeats: int) -> float:
    for _ in range(max(3, repeats // 10)):  # warm up: first calls import and build caches
        run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def http_ms(served: ServedApp, repeats: int) -> float:
    connection = http.client.HTTPConnection(*served.address, timeout=30)

    def get() -> None:
        connection.request("GET", "/api/ping")
        response = connection.getresponse()
        if response.read() != b"ok":
            raise RuntimeError(f"ping answered {response.status}")

    try:
        return median_ms(get, repeats)
    finally:
        connection.close()


def entity_ms(served: ServedApp, name: str, operation: str, body: Callable[[int], str], repeats: int) -> float:
    """One batch of one operation through the entity function the scheduler calls, on a fresh key each time."""
    function = served.host.scheduler._functions[name]
    count = iter(range(10**9))

    def turn() -> None:
        number = next(count)
        response = json.loads(function(entity_batch_json(name, f"k{number}", None, [(operation, body(number))])))
        if response["results"][0].get("isError"):
            raise RuntimeError(f"{name} failed: {response['results'][0]}")

    return median_ms(turn, repeats)


def turn_body(number: int) -> str:
    return signal_body({"message": f"turn {number}", "turnId": f"{number + 1:019d}"})


def measure(mode: str, repeats: int, workdir: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    served = ServedApp(trivial_app(), workdir / f"trivial-{mode}", invocation=mode)
    try:
        figures["http_ms"] = http_ms(served, repeats)
        figures["entity_ms"] = entity_ms(served, "counter", "add", lambda _: signal_body(1), repeats)
    finally:
        served.stop()
    served = ServedApp(agent_app(), workdir / f"agent-{mode}", invocation=mode)
    try:
        name = f"conversation_{AGENT_NAME.lower()}"
        figures["agent_turn_ms"] = entity_ms(served, name, RUN_OPERATION, turn_body, repeats)
    finally:
        served.stop()
    return figures


def table(results: dict[str, Any]) -> str:
    """The figures as printed: one row per call, both modes and the difference."""
    lines = [
        f"Python {results['python']}, median of {results['median_of']} (ms)",
        f"{'':<26}{'direct':>10}{'worker':>10}{'worker adds':>13}",
    ]
    for key, label in WORKER_CALLS.items():
        direct, worker = results["direct"][key], results["worker"][key]
        lines.append(f"{label:<26}{direct:>10.3f}{worker:>10.3f}{worker - direct:>+13.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure both modes, print the table, write the JSON results."""
    parser = quick_parser(
        "python -m bench.worker_invocation",
        __doc__.splitlines()[0],
        "ten calls each: shows that it works",
        RESULTS_FILE,
    )
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args(argv)
    unavailable = worker_unavailable_reason()
    if unavailable is not None:
        print(f"The worker invoker cannot run here: {unavailable}.")
        return 1
    repeats = 10 if args.quick else args.repeats
    with tempfile.TemporaryDirectory() as workdir:
        figures = {mode: measure(mode, repeats, Path(workdir)) for mode in MODES}
    results = {
        "quick": args.quick,
        "machine": machine(),
        "python": sys.version.split()[0],
        "median_of": repeats,
        **figures,
    }
    print(table(results))
    write_results(args.output, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
