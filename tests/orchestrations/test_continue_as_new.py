"""A long chain as `continue_as_new` rounds on the local host: each execution starts with a short history, and
the conversation (its id passed on as input) keeps everything that was said."""

from __future__ import annotations

from pathlib import Path

from clocks import ManualClock
from local_host.driving import OrchestrationHost
from orchestration_apps import build_orchestration_app

from agent_host import HostSettings


def test_rounds_continued_as_new_take_their_turns_in_one_conversation(tmp_path: Path) -> None:
    clock = ManualClock()
    running = OrchestrationHost(
        lambda: build_orchestration_app(settings=HostSettings(), clock=clock), tmp_path / "state", clock
    )
    try:
        instance_id = running.start_new("rounds", None, {"left": 3})

        output = running.output(instance_id)
        history = running.history(instance_id)
    finally:
        running.stop()

    assert output == "heard: Round 3. | Round 2. | Round 1."
    assert sum(1 for event in history if event["EventType"] == 14) == 1  # the last execution's one entity call
