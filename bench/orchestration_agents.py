"""Host overhead per step of an N-step agent chain run as a Durable Functions orchestration on the local host.

`python -m bench.orchestration_agents [--quick] [--output FILE]`

An orchestrator takes N turns in one conversation (`app.get_agent(...).run(...)`, each yielded in turn) with a model
that answers instantly, so all of its time is the host's: the orchestrator's episodes (each replays the history so
far), the entity call, the turn and its commit, and the engine's bookkeeping. An HTTP route on the same app starts
it and polls its status every 2 ms until it completes; total / N is the overhead per step, and the slope between
the two longest chains is what one more step adds once the chain is long. The entity's own turn time (its
`agent_host.turns` log line) is reported apart, so the rest is the orchestration's. For scale, the same app
answers waited HTTP turns (`POST .../turns`) in one conversation, and one `task_all` fans out to many sessions.
The published host cannot run orchestrations without the Functions host, so there is no published figure here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from agent_framework import Agent

from agent_host import AgentFunctionApp, HostSettings

from .http_latency import scripted_turn
from .report import machine
from .served import ServedApp, timed_post
from .standalone import quick_parser, write_results
from .workload import AGENT_INSTRUCTIONS, AGENT_NAME, ZeroLatencyChatClient, reply_to, user_message

RESULTS_FILE = Path(__file__).resolve().parent / "results" / "orchestration_agents.json"
POLL_SECONDS = 0.002
RUN_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class Plan:
    """How much to measure."""

    steps: tuple[int, ...]
    repeats: int
    http_turns: int
    fan_out: int


FULL = Plan(steps=(1, 5, 10, 20, 40, 80), repeats=5, http_turns=40, fan_out=20)
QUICK = Plan(steps=(1, 3), repeats=1, http_turns=5, fan_out=3)


def build_app() -> AgentFunctionApp:
    """One agent on the zero-latency model, a chain and a fan-out orchestrator, and a route that times them."""
    app = AgentFunctionApp(
        agents=[Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)],
        settings=HostSettings(),
        http_auth_level=func.AuthLevel.ANONYMOUS,
    )

    @app.orchestration_trigger(context_name="context")
    def bench_chain(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        agent = app.get_agent(context, AGENT_NAME)
        session = agent.create_session()
        answered = 0
        for step in range(1, context.get_input()["steps"] + 1):
            response = yield agent.run(user_message(step), session=session)
            answered += response.text == reply_to(user_message(step))
        return answered

    @app.orchestration_trigger(context_name="context")
    def bench_fan_out(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        agent = app.get_agent(context, AGENT_NAME)
        calls = range(1, context.get_input()["calls"] + 1)
        responses = yield context.task_all(
            [agent.run(user_message(call), session=agent.create_session()) for call in calls]
        )
        return sum(
            response.text == reply_to(user_message(call)) for call, response in zip(calls, responses, strict=True)
        )

    @app.function_name("bench_run")
    @app.route(route="bench/{orchestrator}", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def run(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        started = time.perf_counter()
        instance_id = await client.start_new(req.route_params["orchestrator"], client_input=req.get_json())
        while True:
            status = await client.get_status(instance_id)
            if status.runtime_status in (df.OrchestrationRuntimeStatus.Completed, df.OrchestrationRuntimeStatus.Failed):
                break
            await asyncio.sleep(POLL_SECONDS)
        elapsed = (time.perf_counter() - started) * 1000
        body = {"ms": elapsed, "status": status.runtime_status.value, "output": status.output}
        return func.HttpResponse(json.dumps(body), mimetype="application/json")

    return app


class _TurnTimes(logging.Handler):
    """Collects the duration of every entity turn from the host's per-turn log line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.durations_ms: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        duration = getattr(record, "duration_ms", None)
        if duration is not None:
            self.durations_ms.append(float(duration))

    def take(self) -> float:
        """The total of the turns logged since the last call, in milliseconds."""
        total, self.durations_ms = sum(self.durations_ms), []
        return total


def timed_orchestration(address: tuple[str, int], orchestrator: str, payload: dict[str, int], expected: int) -> float:
    """Run one orchestration through the app's timing route; its milliseconds, once every answer came back right.

    The figure is the route's own clock (start to completion seen), not the HTTP call's wall time."""
    status, body, _ = timed_post(address, f"/api/bench/{orchestrator}", payload, timeout=RUN_TIMEOUT_SECONDS)
    if status != 200 or body["status"] != "Completed" or body["output"] != expected:
        raise RuntimeError(f"{orchestrator} {payload} did not complete with {expected} right answers: {body}")
    return float(body["ms"])


@dataclass
class ChainFigures:
    """One chain length: its median total time, the overhead per step, and the entity turn's share of a step."""

    steps: int
    total_ms: float
    per_step_ms: float
    entity_turn_ms: float
    rest_per_step_ms: float


@dataclass
class OrchestrationFigures:
    """Everything measured."""

    chains: list[ChainFigures]
    marginal_step_ms: float
    http_turns: int
    http_turn_ms: float
    step_over_http_turn: float
    fan_out_calls: int
    fan_out_ms: float
    fan_out_per_call_ms: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(plan: Plan) -> OrchestrationFigures:
    """Run the plan on a fresh local host and state directory."""
    turn_times = _TurnTimes()
    turn_log = logging.getLogger("agent_host.turns")
    level = turn_log.level
    turn_log.addHandler(turn_times)
    turn_log.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="agent-host-bench-orchestrations-") as state_dir:
        host = ServedApp(build_app(), Path(state_dir), timeout=RUN_TIMEOUT_SECONDS, name="bench-orchestrations")
        try:
            timed_orchestration(host.address, "bench_chain", {"steps": 1}, 1)  # warm-up
            chains = []
            for steps in plan.steps:
                runs, turns = [], []
                for _ in range(plan.repeats):
                    turn_times.take()
                    runs.append(timed_orchestration(host.address, "bench_chain", {"steps": steps}, steps))
                    turns.append(turn_times.take() / steps)
                total, turn = statistics.median(runs), statistics.median(turns)
                chains.append(ChainFigures(steps, total, total / steps, turn, total / steps - turn))
            scripted_turn(host.address, "warm-up", 1)
            turns = [scripted_turn(host.address, "http-baseline", turn) for turn in range(1, plan.http_turns + 1)]
            fan_out = statistics.median(
                timed_orchestration(host.address, "bench_fan_out", {"calls": plan.fan_out}, plan.fan_out)
                for _ in range(plan.repeats)
            )
        finally:
            host.stop()
            turn_log.removeHandler(turn_times)
            turn_log.setLevel(level)
    shorter, longest = chains[-2], chains[-1]
    marginal = (longest.total_ms - shorter.total_ms) / (longest.steps - shorter.steps)
    http_turn = statistics.mean(turns)
    return OrchestrationFigures(
        chains=chains,
        marginal_step_ms=marginal,
        http_turns=len(turns),
        http_turn_ms=http_turn,
        step_over_http_turn=longest.per_step_ms / http_turn,
        fan_out_calls=plan.fan_out,
        fan_out_ms=fan_out,
        fan_out_per_call_ms=fan_out / plan.fan_out,
    )


def table(figures: OrchestrationFigures) -> str:
    """The figures as the terminal shows them."""
    lines = [
        "N-step agent chain in one orchestration, local host, zero-latency model (median of runs):",
        f"{'steps':>6} {'total ms':>10} {'per step ms':>12} {'entity turn ms':>15} {'rest ms':>8}",
        *(
            f"{row.steps:>6} {row.total_ms:>10.1f} {row.per_step_ms:>12.1f} {row.entity_turn_ms:>15.1f} "
            f"{row.rest_per_step_ms:>8.1f}"
            for row in figures.chains
        ),
        f"one more step, once the chain is long: {figures.marginal_step_ms:.1f} ms",
        f"waited HTTP turn in one conversation (mean of {figures.http_turns}): {figures.http_turn_ms:.1f} ms",
        f"longest chain's step / waited HTTP turn: {figures.step_over_http_turn:.2f}",
        f"fan-out of {figures.fan_out_calls} agent calls in one task_all: {figures.fan_out_ms:.1f} ms "
        f"({figures.fan_out_per_call_ms:.1f} ms per call)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, write the JSON results."""
    parser = quick_parser(
        "python -m bench.orchestration_agents",
        __doc__.splitlines()[0],
        "short chains, one run each: shows that it works",
        RESULTS_FILE,
    )
    arguments = parser.parse_args(argv)
    figures = measure(QUICK if arguments.quick else FULL)
    print(table(figures))
    results = {"quick": arguments.quick, "machine": machine(), **figures.as_dict()}
    write_results(arguments.output, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
