"""Running many executors' durable tasks side by side, each executor's work written as its own generator.

`drive` multiplexes work generators: each yields Durable Functions tasks (or lists of them) and receives their
results, and every round's tasks go out in one `task_all`. Each task is wrapped in a `SettledTask`, which completes
with an `Outcome` instead of failing, so one executor's failure reaches that executor's generator (to retry or
fail the run naming it) rather than failing the whole round. Knows the Durable Functions task model only.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
from azure.durable_functions.models.Task import CompoundTask, TaskBase, TaskState

Work = Generator[Any, Any, Any]


@dataclass(frozen=True)
class Outcome:
    """How a task ended: its result, or the exception it failed with."""

    ok: bool
    value: Any


class SettledTask(CompoundTask):
    """A task that completes with its child's `Outcome`, whether the child succeeded or failed.

    It stands for its child's action (as the orchestration-side agent's task does), so the host sees the child's
    own activity, entity call, sub-orchestration or timer, alone or inside `task_all`.
    """

    def __init__(self, task: TaskBase) -> None:
        super().__init__([task])
        self.action_repr = task.action_repr
        self.id = task.id

    def try_set_value(self, child: TaskBase) -> None:
        """Complete with the child's outcome."""
        self.set_value(is_error=False, value=Outcome(child.state is TaskState.SUCCEEDED, child.result))


class ExecutorFailedError(Exception):
    """An executor's work failed; the run fails with a message naming it."""

    def __init__(self, executor_id: str, error: BaseException) -> None:
        # An activity's failure reads "reason \n traceback": the run's error keeps the reason only.
        super().__init__(f"Executor '{executor_id}' failed: {str(error).split(chr(10), 1)[0].strip()}")
        self.executor_id = executor_id


def drive(context: df.DurableOrchestrationContext, works: list[tuple[str, Work]]) -> Generator[Any, Any, list[Any]]:
    """Run the work generators together until each returns; their return values, in order.

    Raises:
        ExecutorFailedError: a work generator raised (it is named by its executor id).
    """
    results: list[Any] = [None] * len(works)
    waiting: dict[int, tuple[bool, list[SettledTask]]] = {}

    def advance(index: int, reply: Any = None, error: BaseException | None = None) -> None:
        executor_id, work = works[index]
        try:
            yielded = work.throw(error) if error is not None else work.send(reply)
        except StopIteration as stop:
            results[index] = stop.value
            return
        except ExecutorFailedError:
            raise
        except Exception as exc:
            raise ExecutorFailedError(executor_id, exc) from exc
        many = isinstance(yielded, list)
        if many and not yielded:
            advance(index, [])
            return
        waiting[index] = (many, [SettledTask(task) for task in (yielded if many else [yielded])])

    for index in range(len(works)):
        advance(index)
    while waiting:
        order = list(waiting)
        outcomes: list[Outcome] = yield context.task_all([task for index in order for task in waiting[index][1]])
        position = 0
        batches = {index: waiting.pop(index) for index in order}
        for index in order:
            many, tasks = batches[index]
            mine = outcomes[position : position + len(tasks)]
            position += len(tasks)
            if many:
                advance(index, mine)
            elif mine[0].ok:
                advance(index, mine[0].value)
            else:
                advance(index, error=_as_exception(mine[0].value))
    return results


def _as_exception(value: Any) -> BaseException:
    return value if isinstance(value, BaseException) else Exception(str(value))
