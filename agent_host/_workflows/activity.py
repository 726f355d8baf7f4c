"""The activity that runs a workflow's non-agent executors: one call runs one executor's deliveries of a superstep.

It runs the executor's own handlers through core's `Executor.execute` with a real `WorkflowContext`, on the state the
orchestration hands it: the workflow's shared state as committed at the superstep's start, and the executor's own
state as its `on_checkpoint_save` left it. It returns what the handlers sent, yielded and requested, the state they
wrote, and the executor's state after them. Runs in an activity: any I/O is fine here, and a retried activity
starts again from the same inputs. Knows core's executors and the codec; nothing about orchestrations or HTTP.
"""

from __future__ import annotations

import threading
from typing import Any

from agent_framework import INTERNAL_SOURCE_ID, Executor, InProcRunnerContext, Workflow, WorkflowEvent, WorkflowMessage

from .._deps.agent_framework_workflows_private import MessageType, State, output_classifier, pending_changes
from .._event_loop import AGENT_LOOP
from .._tracing import TRACE_CONTEXT_KEY, continued_trace
from .codec import Identities, decode, encode
from .contract import HOST_METADATA_KEY, type_at, type_path
from .projection import Occurrences

# One lock per executor object: its instance is shared by every run in this process, and its state is swapped in
# (on_checkpoint_restore) and out (on_checkpoint_save) around each activity, so two runs must not interleave there.
_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class HostedRunnerContext(InProcRunnerContext):
    """Core's in-process runner context, with the run's host metadata that `WorkflowHitlContext.from_context` reads
    (agent-framework-azurefunctions' executors find it at `ctx._runner_context.host_metadata`)."""

    def __init__(self, host_metadata: dict[str, str] | None) -> None:
        super().__init__()
        self.host_metadata = dict(host_metadata) if host_metadata else None


def _lock_for(executor: Executor) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(id(executor), threading.Lock())


def run_executor_activity(
    workflow: Workflow, payload: dict[str, Any], initial_state: Any, timeout_seconds: float
) -> dict[str, Any]:
    """Run one executor's deliveries of one superstep (`payload` as the orchestrator builds it); return its effects.

    `initial_state` is the executor's saved state as built: a run's first activation starts from it.

    Raises:
        Exception: whatever the executor's handler raised (the orchestration records the activity as failed).
    """
    executor = workflow.executors[payload["executorId"]]
    if payload.get("executorState") is None:
        payload = {**payload, "executorState": initial_state}
    with _lock_for(executor), continued_trace(payload.get(TRACE_CONTEXT_KEY)):
        return AGENT_LOOP.run(_run(workflow, executor, payload), timeout=timeout_seconds)


async def _run(workflow: Workflow, executor: Executor, payload: dict[str, Any]) -> dict[str, Any]:
    identities = Identities()
    occurrences = Occurrences()

    def inner(value: Any) -> Any:
        return decode(value, identities, producer=executor.id, occurrences=occurrences)

    state = State()
    state.import_state({key: inner(value) for key, value in payload["state"].items()})
    if payload.get("executorState") is not None:
        await executor.on_checkpoint_restore(inner(payload["executorState"]))
    context = HostedRunnerContext(payload.get(HOST_METADATA_KEY))
    context.set_yield_output_classifier(output_classifier(workflow))
    for item in payload["items"]:
        if item["kind"] == "response":
            request = WorkflowEvent.request_info(
                request_id=item["requestId"],
                source_executor_id=executor.id,
                request_data=inner(item["request"]),
                response_type=type_at(item.get("responseType")) or object,
            )
            message = WorkflowMessage(
                data=inner(item["response"]),
                source_id=INTERNAL_SOURCE_ID(executor.id),
                target_id=executor.id,
                type=MessageType.RESPONSE,
                original_request_info_event=request,
            )
            sources = [INTERNAL_SOURCE_ID(executor.id)]
        else:
            message = WorkflowMessage(data=inner(item["data"]), source_id=item["sourceIds"][0])
            sources = item["sourceIds"]
        await executor.execute(message, sources, state, context)
    return await _effects(executor, state, context, identities)


async def _effects(
    executor: Executor, state: State, context: InProcRunnerContext, identities: Identities
) -> dict[str, Any]:
    sent = [
        {"data": encode(message.data, identities), "targetId": message.target_id}
        for messages in (await context.drain_messages()).values()
        for message in messages
    ]
    outputs: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []
    for event in await context.drain_events():
        if event.type == "output":
            outputs.append({"data": encode(event.data, identities)})
        elif event.type == "request_info":
            requests.append(
                {
                    "requestId": event.request_id,
                    "data": encode(event.data, identities),
                    "responseType": type_path(event.response_type),
                }
            )
    written, deletes = pending_changes(state)
    writes = {key: encode(value, identities) for key, value in written.items()}
    saved = await executor.on_checkpoint_save()
    return {
        "sent": sent,
        "outputs": outputs,
        "requests": requests,
        "stateWrites": writes,
        "stateDeletes": deletes,
        "executorState": encode(saved, identities) if saved else None,
    }
