"""Routing a superstep's messages through the workflow's edges with core's own edge runners.

Core's runners decide every delivery (conditions, fan-out selection, switch-case, fan-in buffering, type checks);
here their targets are stand-ins that record each delivery instead of running the executor, so the orchestrator
runs the executors itself. The runners are built once per orchestrator replay and fed the same messages in the
same order, so a fan-in's buffer is rebuilt exactly. Conditions run here: they must be synchronous and
deterministic (registration refuses async ones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import Executor, Workflow, WorkflowMessage, create_edge_runner

from .._deps.agent_framework_workflows_private import EdgeRunner, State, gather_cancelling_siblings_on_error
from .._event_loop import AGENT_LOOP


@dataclass(frozen=True)
class Delivery:
    """One message an edge delivered to an executor, with the sources core names in its context."""

    target_id: str
    message: WorkflowMessage
    source_ids: list[str]


class _RecordingTarget:
    """Stands in for an executor: answers `can_handle` as it does, records `execute` instead of running it."""

    def __init__(self, executor: Executor, deliveries: list[Delivery]) -> None:
        self.id = executor.id
        self._executor = executor
        self._deliveries = deliveries

    def can_handle(self, message: WorkflowMessage) -> bool:
        return self._executor.can_handle(message)

    async def execute(
        self, message: Any, source_executor_ids: list[str], state: State, runner_context: Any, **_: Any
    ) -> None:
        self._deliveries.append(Delivery(self.id, message, list(source_executor_ids)))


class Router:
    """Core's edge runners for one run of a workflow, delivering to recording stand-ins."""

    def __init__(self, workflow: Workflow) -> None:
        self._deliveries: list[Delivery] = []
        targets: Mapping[str, Any] = {
            executor_id: _RecordingTarget(executor, self._deliveries)
            for executor_id, executor in workflow.executors.items()
        }
        self._by_source: dict[str, list[EdgeRunner]] = {}
        for group in workflow.edge_groups:
            runner = create_edge_runner(group, dict(targets))
            for source_id in group.source_executor_ids:
                self._by_source.setdefault(source_id, []).append(runner)
        self._state = State()

    def route(self, messages: Mapping[str, Sequence[WorkflowMessage]]) -> list[Delivery]:
        """The deliveries of a superstep's messages (by source, in send order), in the order core makes them."""
        self._deliveries.clear()
        # Core's runners are coroutines that await nothing real; the host's one agent loop runs them, rather than a
        # loop made (and closed) for every superstep of every replay.
        AGENT_LOOP.run(self._route(messages))
        return list(self._deliveries)

    async def _route(self, messages: Mapping[str, Sequence[WorkflowMessage]]) -> None:
        # The same concurrency shape as core's RunnerImpl._run_iteration, so deliveries come out in its order.
        async def deliver(source_id: str, batch: Sequence[WorkflowMessage]) -> None:
            async def through(runner: EdgeRunner) -> None:
                for message in batch:
                    await runner.send_message(message, self._state, None)  # type: ignore[arg-type]

            runners = self._by_source.get(source_id, [])
            if runners:
                await gather_cancelling_siblings_on_error(*(through(runner) for runner in runners))

        await gather_cancelling_siblings_on_error(*(deliver(source, batch) for source, batch in messages.items()))
