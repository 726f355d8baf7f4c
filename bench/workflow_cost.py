"""`python -m bench.workflow_cost`: what hosting costs per superstep, against the same workflow run in process.

Each workflow is run in process with core (`workflow.run`) and hosted on the local host (one orchestration, its
activities and its agent nodes' entities, started over HTTP and waited for), with a model that answers at once, so
the figures are the host's own cost. Reported per superstep, with the ratio hosted / in process from the same run.
Shapes: a sequential chain of agents, a fan-out/fan-in through an activity, and a writer-critic cycle (whose
orchestrator replays a longer history every superstep). Standalone: it prints a table and, with `--output`, JSON.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

from agent_host import AgentFunctionApp, HostSettings
from agent_host._event_loop import AgentEventLoop

from .served import ServedApp, timed_post
from .standalone import write_results
from .workload import ZeroLatencyChatClient

_LOOP = AgentEventLoop()


class _Collect(Executor):
    @handler
    async def collect(self, replies: list[AgentExecutorResponse], ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(" | ".join(reply.agent_response.text[:20] for reply in replies))


class _Rounds(Executor):
    def __init__(self, id: str, rounds: int) -> None:
        super().__init__(id=id)
        self.rounds = rounds
        self.seen = 0

    @handler
    async def count(self, response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorResponse, str]) -> None:
        self.seen += 1
        if self.seen >= self.rounds:
            await ctx.yield_output(response.agent_response.text[:20])
        else:
            await ctx.send_message(response)

    async def on_checkpoint_save(self) -> dict[str, int]:
        return {"seen": self.seen}

    async def on_checkpoint_restore(self, state: dict[str, int]) -> None:
        self.seen = state.get("seen", 0)


def _node(name: str) -> AgentExecutor:
    return AgentExecutor(Agent(ZeroLatencyChatClient(), name=name, instructions="Answer briefly."), id=name)


def chain(length: int) -> Workflow:
    nodes = [_node(f"agent{index}") for index in range(length)]
    return WorkflowBuilder(name="chain", start_executor=nodes[0]).add_chain(nodes).build()


def fan_out_in() -> Workflow:
    writer, left, right = _node("writer"), _node("left"), _node("right")
    collect = _Collect(id="collect")
    return (
        WorkflowBuilder(name="fan", start_executor=writer, output_from=[collect])
        .add_fan_out_edges(writer, [left, right])
        .add_fan_in_edges([left, right], collect)
        .build()
    )


def cycle(rounds: int) -> Workflow:
    writer, critic = _node("writer"), _node("critic")
    counter = _Rounds("rounds", rounds)
    return (
        WorkflowBuilder(name="cycle", start_executor=writer, max_iterations=3 * rounds + 3)
        .add_chain([writer, critic, counter])
        .add_edge(counter, writer)
        .build()
    )


@dataclass
class Row:
    """One shape's figures (milliseconds are medians over the repeats)."""

    shape: str
    supersteps: int
    in_process_ms: float
    hosted_ms: float
    in_process_per_superstep_ms: float
    hosted_per_superstep_ms: float
    hosted_over_in_process: float


def _supersteps(build: Callable[[], Workflow]) -> int:
    result = _LOOP.run(build().run("Write one line about rain."))
    return sum(1 for event in result if event.type == "superstep_completed")


def _in_process_ms(build: Callable[[], Workflow], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        workflow = build()
        started = time.perf_counter()
        _LOOP.run(workflow.run("Write one line about rain."))
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _hosted_run(address: tuple[str, int], name: str) -> float:
    """Start a run, wait for it, and return its wall time in milliseconds; fails unless the run completed, so that
    no figure is taken from a run that failed."""
    body = {"input": "Write one line about rain.", "timeoutSeconds": 120}
    status, answer, elapsed = timed_post(address, f"/api/workflows/{name}/runs", body, timeout=150)
    if status != 200 or not isinstance(answer, dict) or answer.get("status") != "completed":
        raise RuntimeError(f"the hosted run did not complete: {status} {str(answer)[:300]}")
    return elapsed


def _hosted_ms(build: Callable[[], Workflow], repeats: int) -> float:
    # HTTP in, one orchestration, its activities and entities, SQLite: the whole local host, as a caller sees it.
    with tempfile.TemporaryDirectory(prefix="agent-host-bench-") as directory:
        workflow = build()
        app = AgentFunctionApp(workflows=[workflow], settings=HostSettings())
        host = ServedApp(app, Path(directory), timeout=120, name="bench-workflow-host")
        try:
            _hosted_run(host.address, workflow.name)
            samples = [_hosted_run(host.address, workflow.name) for _ in range(repeats)]
        finally:
            host.stop()
    return statistics.median(samples)


def measure(repeats: int, rounds: int) -> list[Row]:
    """Every shape's figures."""
    shapes: list[tuple[str, Callable[[], Workflow]]] = [
        ("chain of 4 agents", lambda: chain(4)),
        ("fan-out 2, fan-in activity", fan_out_in),
        (f"writer-critic cycle, {rounds} rounds", lambda: cycle(rounds)),
    ]
    rows = []
    for shape, build in shapes:
        steps = _supersteps(build)
        core = _in_process_ms(build, repeats)
        hosted = _hosted_ms(build, repeats)
        core, hosted = round(core, 2), round(hosted, 1)
        rows.append(
            Row(shape, steps, core, hosted, round(core / steps, 3), round(hosted / steps, 2), round(hosted / core, 1))
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, and write JSON when asked."""
    parser = argparse.ArgumentParser(prog="python -m bench.workflow_cost", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    rows = measure(args.repeats, args.rounds)
    print(f"{'shape':34} {'steps':>5} {'core ms':>8} {'hosted ms':>10} {'core/step':>9} {'host/step':>9} {'ratio':>6}")
    for row in rows:
        per_step = f"{row.in_process_per_superstep_ms:9.3f} {row.hosted_per_superstep_ms:9.2f}"
        print(
            f"{row.shape:34} {row.supersteps:5d} {row.in_process_ms:8.2f} {row.hosted_ms:10.1f} "
            f"{per_step} {row.hosted_over_in_process:6.1f}"
        )
    if args.output is not None:
        write_results(args.output, [asdict(row) for row in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
