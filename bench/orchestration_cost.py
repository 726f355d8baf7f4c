"""The local host's cost per orchestration episode against history length, and what replay makes of a whole run.

`python -m bench.orchestration_cost` (or `--quick`) prints two tables, every ratio measured in the same run:

1. One episode of a sequential orchestrator ("call activity i, then i + 1, ...") whose history holds `steps` finished
   activities, as the local host runs it: read the instance, history and inbox from SQLite, replay the orchestrator in
   the SDK, work out what it scheduled, commit. Beside it, the SDK's replay alone (the same context JSON through the
   orchestrator handle) and the JSON floor of the history (`json.loads` + `json.dumps` of the stored events).
2. Whole orchestrations of `steps` sequential activities, every episode on the host's code path (store, planner,
   SDK; no threads, and the trivial activity answered directly): one episode per activity, each replaying the whole
   history so far, so the total grows with the square of the number of steps.

Times are CPU milliseconds, medians of interleaved runs (see `workload.interleaved_medians`).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from azure.durable_functions.models.history.HistoryEventType import HistoryEventType

from agent_host._local_host.episode import AppFunctions, Progress, ScheduledLeaf, plan_episode
from agent_host._local_host.orchestration_protocol import context_json, history_event
from agent_host._local_host.orchestration_store import EpisodeCommit, OrchestrationStore
from agent_host._local_host.outbox import InboxKind, InstanceStart, OrchestrationEvent
from agent_host._local_host.store import EntityStore

from .workload import cpu_ms, interleaved_medians

INSTANCE = "bench-chain"
START_MS = 1_700_000_000_000
EPISODE_SIZES = (10, 100, 1000)
WHOLE_RUN_SIZES = (25, 50, 100)
QUICK_EPISODE_SIZES = (10, 40)
QUICK_WHOLE_RUN_SIZES = (5, 10)


@functools.cache
def chain_app() -> tuple[Any, AppFunctions]:
    """A DFApp with the benchmark's orchestrator (sequential activities) and its activity; returns the handle."""
    app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.orchestration_trigger(context_name="context")
    def chain(context: df.DurableOrchestrationContext):
        total = 0
        for step in range(context.get_input()):
            total += yield context.call_activity("step", step)
        return total

    @app.activity_trigger(input_name="number")
    def step(number: int) -> int:
        return number

    (handle,) = [f.get_user_function() for f in app.get_functions() if f.get_function_name() == "chain"]
    return handle, AppFunctions(orchestrators={"chain": "chain"}, activities={"step": "step"}, entities=frozenset())


def _completed(step: int, at_ms: int) -> dict[str, Any]:
    return history_event(HistoryEventType.TASK_COMPLETED, at_ms, TaskScheduledId=step, Result=json.dumps(step))


def _scheduled(step: int, at_ms: int) -> dict[str, Any]:
    return history_event(
        HistoryEventType.TASK_SCHEDULED, at_ms, event_id=step, Name="step", Version="", Input=json.dumps(step)
    )


def seed_chain(state_dir: Path, steps: int, total_steps: int) -> None:
    """Store the instance as the host leaves it after `steps` activities finished, the last completion in its inbox.

    Its history is the one the local host writes for this orchestrator, one episode per finished activity.
    """
    store = EntityStore(state_dir)
    orchestrations = OrchestrationStore(store)
    orchestrations.start(
        InstanceStart(INSTANCE, "chain", None, "execution", json.dumps(json.dumps(total_steps)), START_MS)
    )
    events: list[dict[str, Any]] = []
    for step in range(steps):
        at = START_MS + step * 1000
        events.append(history_event(HistoryEventType.ORCHESTRATOR_STARTED, at))
        if step == 0:
            episode = orchestrations.load_episode(INSTANCE, at)
            assert episode is not None
            events.append(episode.inbox[0].event)
        else:
            events.append(_completed(step - 1, at))
        events.append(_scheduled(step, at))
        events.append(history_event(HistoryEventType.ORCHESTRATOR_COMPLETED, at))
    progress = Progress(
        started=True,
        next_id=steps,
        leaves=[ScheduledLeaf("activity", "step", [step], attempts=1) for step in range(steps)],
        open={str(steps - 1): [steps - 1, "task"]},
    )
    episode = orchestrations.load_episode(INSTANCE, START_MS)
    assert episode is not None
    orchestrations.commit_episode(
        EpisodeCommit(
            instance_id=INSTANCE,
            execution_id="execution",
            consumed=[row.seq for row in episode.inbox],
            history=events,
            reset_history=False,
            status="Running",
            new_execution_id="execution",
            input=episode.instance.input,
            output=None,
            custom_status=None,
            progress=progress.to_json(),
            updated_ms=START_MS,
            messages=[],
        )
    )
    last = START_MS + steps * 1000
    orchestrations.send(
        [OrchestrationEvent(INSTANCE, "execution", InboxKind.COMPLETION, _completed(steps - 1, last), last, last)]
    )
    store.close()


@dataclass
class EpisodeCost:
    """One episode at a history length."""

    steps: int
    events: int
    history_bytes: int
    floor_ms: float
    sdk_replay_ms: float
    host_episode_ms: float
    host_over_floor: float
    sdk_share: float
    host_ms_per_event: float


def measure_episode(steps: int, repeats: int, workdir: Path) -> EpisodeCost:
    """Time one episode of the chain after `steps` finished activities (see the module docstring)."""
    handle, functions = chain_app()
    seeded = workdir / f"seed-{steps}"
    seed_chain(seeded, steps, steps + 1)
    now = START_MS + (steps + 1) * 1000
    store = EntityStore(seeded)
    orchestrations = OrchestrationStore(store)
    episode = orchestrations.load_episode(INSTANCE, now)
    assert episode is not None and len(episode.inbox) == 1
    commit = plan_episode(episode, now_ms=now, orchestrator=handle, functions=functions)
    assert commit is not None and commit.status == "Running"
    assert [e["EventId"] for e in commit.history if e["EventType"] == HistoryEventType.TASK_SCHEDULED] == [steps]
    history_text = "[" + ",".join(episode.played) + "]"
    context = context_json(
        played=episode.played,
        new_events=[history_event(HistoryEventType.ORCHESTRATOR_STARTED, now), episode.inbox[0].event],
        instance_id=INSTANCE,
        input_text=episode.instance.input,
        parent_instance_id=None,
    )
    store.close()
    scratch = workdir / f"scratch-{steps}"
    session: dict[str, Any] = {}

    def fresh_copy() -> None:
        """Untimed: a copy of the seeded database, so every timed episode starts from the same state."""
        if "store" in session:
            session["store"].close()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(seeded, scratch)
        session["store"] = EntityStore(scratch)

    def host_episode() -> None:
        """The local host's episode: load, replay and plan, commit."""
        work = OrchestrationStore(session["store"])
        loaded = work.load_episode(INSTANCE, now)
        assert loaded is not None
        planned = plan_episode(loaded, now_ms=now, orchestrator=handle, functions=functions)
        assert planned is not None
        work.commit_episode(planned)

    medians = interleaved_medians(
        {
            "floor": (lambda: json.dumps(json.loads(history_text)), None),
            "sdk": (lambda: handle(context), None),
            "host": (host_episode, fresh_copy),
        },
        repeats,
    )
    session["store"].close()
    events = len(episode.played) + 2
    return EpisodeCost(
        steps=steps,
        events=events,
        history_bytes=len(history_text.encode()),
        floor_ms=round(medians["floor"], 3),
        sdk_replay_ms=round(medians["sdk"], 3),
        host_episode_ms=round(medians["host"], 3),
        host_over_floor=round(medians["host"] / medians["floor"], 1),
        sdk_share=round(medians["sdk"] / medians["host"], 2),
        host_ms_per_event=round(medians["host"] / events, 4),
    )


@dataclass
class RunCost:
    """A whole orchestration of `steps` sequential activities."""

    steps: int
    episodes: int
    total_ms: float
    ms_per_step: float


def run_chain(steps: int, workdir: Path) -> tuple[int, int]:
    """Run the chain to completion on the host's code path, one episode per step; return (episodes, output)."""
    handle, functions = chain_app()
    store = EntityStore(workdir)
    orchestrations = OrchestrationStore(store)
    orchestrations.start(InstanceStart(INSTANCE, "chain", None, "execution", json.dumps(json.dumps(steps)), START_MS))
    episodes = 0
    now = START_MS
    while True:
        now += 1000
        episode = orchestrations.load_episode(INSTANCE, now)
        assert episode is not None
        commit = plan_episode(episode, now_ms=now, orchestrator=handle, functions=functions)
        if commit is None:
            break
        orchestrations.commit_episode(commit)
        episodes += 1
        if commit.status == "Completed":
            output = json.loads(commit.output or "null")
            break
        for queued in orchestrations.queued_activities():  # `step` returns its input: answer it directly
            request = queued.request
            completion = history_event(
                HistoryEventType.TASK_COMPLETED, now, TaskScheduledId=request.task_id, Result=request.input
            )
            orchestrations.complete_activity(
                queued.seq,
                OrchestrationEvent(INSTANCE, request.execution_id, InboxKind.COMPLETION, completion, now, now),
            )
    store.close()
    return episodes, output


def measure_run(steps: int, workdir: Path) -> RunCost:
    """Time whole runs of the chain (median of three)."""
    samples = []
    outcomes: list[tuple[int, int]] = []
    for attempt in range(3):
        directory = workdir / f"run-{steps}-{attempt}"
        samples.append(cpu_ms(lambda directory=directory: outcomes.append(run_chain(steps, directory))))
    episodes, output = outcomes[-1]
    assert output == sum(range(steps)), output
    total = sorted(samples)[1]
    return RunCost(steps=steps, episodes=episodes, total_ms=round(total, 1), ms_per_step=round(total / steps, 2))


def measure(*, quick: bool) -> dict[str, Any]:
    """Run both tables; returns the figures and the ratios between sizes."""
    episode_sizes = QUICK_EPISODE_SIZES if quick else EPISODE_SIZES
    run_sizes = QUICK_WHOLE_RUN_SIZES if quick else WHOLE_RUN_SIZES
    repeats = 3 if quick else 9
    with tempfile.TemporaryDirectory(prefix="orchestration-bench-") as temp:
        workdir = Path(temp)
        episodes = [measure_episode(steps, repeats, workdir) for steps in episode_sizes]
        runs = [measure_run(steps, workdir) for steps in run_sizes]
    first, last = episodes[0], episodes[-1]
    return {
        "quick": quick,
        "episodes": [asdict(cost) for cost in episodes],
        "runs": [asdict(cost) for cost in runs],
        "episode_growth": {
            "history_ratio": round(last.events / first.events, 1),
            "host_episode_ratio": round(last.host_episode_ms / first.host_episode_ms, 1),
            "sdk_replay_ratio": round(last.sdk_replay_ms / first.sdk_replay_ms, 1),
            "floor_ratio": round(last.floor_ms / first.floor_ms, 1),
        },
        "run_growth": {
            "steps_ratio": round(runs[-1].steps / runs[0].steps, 1),
            "total_ratio": round(runs[-1].total_ms / runs[0].total_ms, 1),
            # total ~ steps ** exponent between the smallest and the largest run: 2 is quadratic
            "exponent": round(
                math.log(runs[-1].total_ms / runs[0].total_ms) / math.log(runs[-1].steps / runs[0].steps), 2
            ),
        },
    }


def print_report(figures: dict[str, Any]) -> None:
    """Print the two tables and the growth ratios."""
    print("One episode after N finished activities (CPU ms; medians)")
    print(
        f"{'N':>6} {'events':>7} {'bytes':>9} {'floor':>8} {'SDK':>8} {'host':>8} {'host/floor':>10} {'SDK share':>9}"
    )
    for row in figures["episodes"]:
        print(
            f"{row['steps']:>6} {row['events']:>7} {row['history_bytes']:>9} {row['floor_ms']:>8.2f} "
            f"{row['sdk_replay_ms']:>8.2f} {row['host_episode_ms']:>8.2f} {row['host_over_floor']:>10.1f} "
            f"{row['sdk_share']:>9.2f}"
        )
    growth = figures["episode_growth"]
    print(
        f"History {growth['history_ratio']}x longer: episode {growth['host_episode_ratio']}x, SDK replay "
        f"{growth['sdk_replay_ratio']}x, JSON floor {growth['floor_ratio']}x."
    )
    print()
    print("Whole orchestration of N sequential activities (CPU ms; one episode per activity)")
    print(f"{'N':>6} {'episodes':>9} {'total':>9} {'per step':>9}")
    for row in figures["runs"]:
        print(f"{row['steps']:>6} {row['episodes']:>9} {row['total_ms']:>9.1f} {row['ms_per_step']:>9.2f}")
    run_growth = figures["run_growth"]
    print(
        f"{run_growth['steps_ratio']}x the steps cost {run_growth['total_ratio']}x the CPU: the total grows as "
        f"N^{run_growth['exponent']} (every episode replays the whole history so far)."
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.orchestration_cost [--quick] [--output FILE]`."""
    parser = argparse.ArgumentParser(prog="python -m bench.orchestration_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke run)")
    parser.add_argument("--output", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    figures = measure(quick=args.quick)
    print_report(figures)
    if args.output is not None:
        args.output.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
