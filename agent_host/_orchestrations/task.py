"""AgentTask: the task `run` returns; yielding it gives the orchestration the turn's `AgentResponse`.

It wraps the entity call and exposes that call's action as its own, so the SDK schedules exactly one CallEntity
action for it, alone or inside `task_all`/`task_any`, under any replay schema. The first turn an execution takes in a
conversation also carries the activity that starts the conversation's expiry orchestration: scheduled with the call,
its outcome ignored. Knows the Durable Functions task model, not the entity's state.
"""

from __future__ import annotations

from azure.durable_functions.models.actions.WhenAllAction import WhenAllAction
from azure.durable_functions.models.Task import CompoundTask, TaskBase, TaskState

from .errors import ENTITY_CALL_FAILED, AgentTurnError
from .reply import AgentCall


class AgentTask(CompoundTask):
    """The entity call of one agent turn, completed with an `AgentResponse` or failed with an `AgentTurnError`.

    Args:
        entity_task: The `call_entity` task of the turn's `run` operation.
        call: Where the call went and what its answer must be.
        watch: The activity task that starts the conversation's expiry orchestration, if this turn carries it.
    """

    def __init__(self, entity_task: TaskBase, call: AgentCall, *, watch: TaskBase | None = None) -> None:
        # Set before the base class runs: it completes the task at once when the call already has its result.
        self.call = call
        self.watch = watch
        if watch is None:
            super().__init__([entity_task])
            # The call's own action stands for this task, so the host sees a plain entity call.
            self.action_repr = entity_task.action_repr
        else:
            # Both actions in one: a list under replay schema V1 (whose actions are lists), a WhenAll after it.
            schema_v1 = isinstance(entity_task.action_repr, list)
            super().__init__([entity_task, watch], None if schema_v1 else WhenAllAction)
        self.id = entity_task.id

    def try_set_value(self, child: TaskBase) -> None:
        """Complete with the reply's `AgentResponse`, or fail with why there is none."""
        if child is self.watch:
            # Starting the expiry orchestration is a side effect: the turn neither waits for it nor fails with it.
            return
        if child.state is TaskState.SUCCEEDED:
            try:
                response = self.call.response_from(child.result)
            except AgentTurnError as error:
                self.set_value(is_error=True, value=error)
            else:
                self.set_value(is_error=False, value=response)
            return
        # The operation itself failed (bad input, unreadable state): the host gave only a message.
        failure = self.call.error(str(child.result).strip(), ENTITY_CALL_FAILED)
        failure.__cause__ = child.result if isinstance(child.result, BaseException) else None
        self.set_value(is_error=True, value=failure)
