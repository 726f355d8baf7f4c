"""The orchestrator of a hosted workflow: core's supersteps, replayed from the orchestration's history.

Each superstep routes the pending messages through core's edge runners, then runs every addressed executor side by
side: an agent node takes turns on its conversation entity, a sub-workflow runs as a sub-orchestration, any other
executor runs its handlers in an activity. What they send is the next superstep's messages; what they yield is the
run's output; what they request makes the run wait for responses (`ctx.request_info` and tool approvals), raised as
external events named by the request id. `max_iterations` bounds the supersteps as in core. Everything here is a
function of the history, so a restart at any point replays to the same place. Knows no HTTP.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import azure.durable_functions as df
from agent_framework import INTERNAL_SOURCE_ID, Content, WorkflowExecutor, WorkflowMessage

from .._deps.agent_framework_workflows_private import output_classifier
from .._orchestrations.agent import started_event
from .._tracing import TRACE_CONTEXT_KEY, orchestration_trace_context
from .agent_node import AgentNodeRunner, NodeEffects, NodeState, PendingRequest, RunContext
from .codec import Identities, decode, encode, to_json_output
from .contract import (
    ANSWERED_KEY,
    CHILDREN_KEY,
    HOST_INSTANCE_ID,
    HOST_METADATA_KEY,
    HOST_REQUEST_PATH_PREFIX,
    HOST_WORKFLOW_NAME,
    MAX_ANSWERED_IN_STATUS,
    OUTPUTS_KEY,
    PENDING_KEY,
    PRODUCERS_KEY,
    RESPONSE_FIELD,
    RUNNING,
    STATUS_KEY,
    SUPERSTEP_KEY,
    WAITING_FOR_INPUT,
    RunStatus,
    coerce_response,
    type_at,
)
from .projection import DeliveryLedger, Occurrences
from .registration import HostedWorkflow
from .routing import Delivery, Router
from .tasks import Work, drive

logger = logging.getLogger("agent_host.workflows")

# Keys of the orchestration's input and output.
INPUT_KEY = "input"
CHILD_KEY = "child"
CARRIED_KEY = "carried"
# The custom status is capped at 16 KB on Azure: request data past this share is left out of it.
MAX_STATUS_DATA_BYTES = 12 * 1024


class WorkflowConvergenceError(Exception):
    """The run still had messages after `max_iterations` supersteps (core raises the same)."""


@dataclass
class _ResponseDelivery:
    target_id: str
    request: PendingRequest
    response: Any


@dataclass
class _Superstep:
    """The deliveries of one superstep, grouped by executor in the order they were made."""

    by_target: dict[str, list[Delivery | _ResponseDelivery]] = field(default_factory=dict)

    def add(self, target_id: str, item: Delivery | _ResponseDelivery) -> None:
        self.by_target.setdefault(target_id, []).append(item)


class WorkflowRun:
    """One run of a hosted workflow, driven by its orchestration context."""

    def __init__(
        self, context: df.DurableOrchestrationContext, hosted: HostedWorkflow, conversation_ttl_seconds: float = 0.0
    ) -> None:
        self.context = context
        self.hosted = hosted
        self.workflow = hosted.workflow
        self.identities = Identities()
        self.occurrences = Occurrences()
        self.shared: dict[str, Any] = {}
        self.executor_states: dict[str, Any] = {}
        self.nodes: dict[str, NodeState] = {}
        self.outputs: list[Any] = []
        self.producers: list[str] = []
        self.host: dict[str, str] = {}
        self.pending: dict[str, PendingRequest] = {}
        self.answered: list[str] = []
        self.children: dict[str, str] = {}
        self.waits: dict[str, Any] = {}
        self.superstep = 0
        self.dispatches = 0
        self.router = Router(self.workflow)
        self.agents = RunContext(
            context=context,
            scope=context.instance_id,
            identities=self.identities,
            occurrences=self.occurrences,
            receipts=DeliveryLedger(),
            retry=hosted.retry,
            conversation_ttl_seconds=conversation_ttl_seconds,
        )

    def run(self) -> Generator[Any, Any, dict[str, Any]]:
        """The orchestrator body: supersteps until no messages are left and no request is pending."""
        started = self.context.get_input() or {}
        # A sub-workflow is addressed through the top-level run, as its parent told it.
        self.host = started.get(HOST_METADATA_KEY) or {
            HOST_INSTANCE_ID: self.context.instance_id,
            HOST_WORKFLOW_NAME: self.workflow.name,
            HOST_REQUEST_PATH_PREFIX: "",
        }
        start_id = self.workflow.start_executor_id
        value = self._decode(started.get(INPUT_KEY), INTERNAL_SOURCE_ID(start_id))
        messages: dict[str, list[WorkflowMessage]] = {
            INTERNAL_SOURCE_ID(start_id): [
                WorkflowMessage(data=value, source_id=INTERNAL_SOURCE_ID(start_id), target_id=start_id)
            ]
        }
        responses: list[_ResponseDelivery] = []
        while True:
            if messages or responses:
                if self.superstep >= self.workflow.max_iterations:
                    raise WorkflowConvergenceError(
                        f"Workflow '{self.workflow.name}' did not converge after {self.workflow.max_iterations} "
                        "supersteps (max_iterations)."
                    )
                self._publish(RUNNING)
                messages = yield from self._run_superstep(messages, responses)
                responses = []
                self.superstep += 1
                continue
            if not self.pending:
                break
            self._publish(WAITING_FOR_INPUT)
            responses = yield from self._wait_for_response()
        self._publish(RUNNING)
        result: dict[str, Any] = {
            OUTPUTS_KEY: [to_json_output(output) for output in self.outputs],
            PRODUCERS_KEY: self.producers,
        }
        if started.get(CHILD_KEY):
            result[CARRIED_KEY] = [encode(output, self.identities) for output in self.outputs]
        return result

    def _decode(self, data: Any, producer: str) -> Any:
        return decode(data, self.identities, producer=producer, occurrences=self.occurrences)

    # Supersteps

    def _run_superstep(
        self, messages: dict[str, list[WorkflowMessage]], responses: list[_ResponseDelivery]
    ) -> Generator[Any, Any, dict[str, list[WorkflowMessage]]]:
        step = _Superstep()
        for delivery in self.router.route(messages):
            step.add(delivery.target_id, delivery)
        for response in responses:
            step.add(response.target_id, response)
        works: list[tuple[str, Work]] = []
        for target_id, items in step.by_target.items():
            works.append((target_id, self._work_for(target_id, items)))
        self._publish(RUNNING)
        results: list[NodeEffects] = yield from drive(self.context, works)
        following: dict[str, list[WorkflowMessage]] = {}
        for effects in results:
            for message in effects.sent:
                following.setdefault(message.source_id, []).append(message)
            for executor_id, output in effects.outputs:
                if output_classifier(self.workflow)(executor_id) == "output":
                    self.outputs.append(output)
                    self.producers.append(executor_id)
            for request in effects.requests:
                self.pending[request.request_id] = request
        self.children.clear()
        return following

    def _work_for(self, target_id: str, items: list[Delivery | _ResponseDelivery]) -> Work:
        executor = self.workflow.executors[target_id]
        if target_id in self.hosted.agent_nodes:
            return self._agent_work(target_id, items)
        if isinstance(executor, WorkflowExecutor):
            return self._sub_workflow_work(executor, items)
        return self._activity_work(target_id, items)

    def _agent_work(self, target_id: str, items: list[Delivery | _ResponseDelivery]) -> Work:
        node = AgentNodeRunner(
            self.agents, self.hosted.agent_nodes[target_id], self.nodes.setdefault(target_id, NodeState())
        )
        effects = NodeEffects()
        for item in items:
            if isinstance(item, _ResponseDelivery):
                yield from node.take_response(item.request.request_id, item.response, effects)
            else:
                yield from node.take_message(item.message, effects)
        return effects

    def _activity_work(self, target_id: str, items: list[Delivery | _ResponseDelivery]) -> Work:
        payload = {
            "executorId": target_id,
            "items": [self._activity_item(item) for item in items],
            "state": dict(self.shared),
            "executorState": self.executor_states.get(target_id),
            HOST_METADATA_KEY: self.host,
        }
        # Core's executor and edge spans in the activity continue the run's trace, as its agent nodes do.
        if (carried := orchestration_trace_context(started_event(self.context))) is not None:
            payload[TRACE_CONTEXT_KEY] = carried
        result = yield from self._with_retries(lambda: self.context.call_activity(self.hosted.activity_name, payload))
        effects = NodeEffects()
        for sent in result["sent"]:
            data = self._decode(sent["data"], target_id)
            effects.sent.append(WorkflowMessage(data=data, source_id=target_id, target_id=sent.get("targetId")))
        for output in result["outputs"]:
            effects.outputs.append((target_id, self._decode(output["data"], target_id)))
        for request in result["requests"]:
            data = self._decode(request["data"], target_id)
            effects.requests.append(PendingRequest(request["requestId"], target_id, data, request.get("responseType")))
        self.shared.update(result["stateWrites"])
        for key in result["stateDeletes"]:
            self.shared.pop(key, None)
        if result.get("executorState") is not None:
            self.executor_states[target_id] = result["executorState"]
        return effects

    def _activity_item(self, item: Delivery | _ResponseDelivery) -> dict[str, Any]:
        if isinstance(item, _ResponseDelivery):
            return {
                "kind": "response",
                "requestId": item.request.request_id,
                "request": encode(item.request.data, self.identities),
                "responseType": item.request.response_type,
                "response": encode(item.response, self.identities),
            }
        return {"kind": "message", "data": encode(item.message.data, self.identities), "sourceIds": item.source_ids}

    def _sub_workflow_work(self, executor: WorkflowExecutor, items: list[Delivery | _ResponseDelivery]) -> Work:
        child = self.hosted.sub_workflows[executor.id]
        tasks = []
        for item in items:
            if isinstance(item, _ResponseDelivery):
                continue
            instance_id = f"{self.context.instance_id}-{self.dispatches}"
            self.dispatches += 1
            # The child's requests are qualified `{executorId}~{n}~` by its place among this executor's children in
            # the status, which is where it is listed now.
            ordinal = list(self.children.values()).count(executor.id)
            self.children[instance_id] = executor.id
            prefix = f"{self.host[HOST_REQUEST_PATH_PREFIX]}{executor.id}~{ordinal}~"
            data = {
                INPUT_KEY: encode(item.message.data, self.identities),
                CHILD_KEY: True,
                HOST_METADATA_KEY: {**self.host, HOST_REQUEST_PATH_PREFIX: prefix},
            }
            tasks.append((instance_id, data))
        self._publish(RUNNING)
        # Children run side by side; a child's own executors and agent turns retry under its policy.
        results = yield [
            self.context.call_sub_orchestrator(child.orchestrator_name, data, instance_id)
            for instance_id, data in tasks
        ]
        failed = next((outcome.value for outcome in results if not outcome.ok), None)
        if failed is not None:
            raise failed if isinstance(failed, BaseException) else Exception(str(failed))
        effects = NodeEffects()
        for outcome in results:
            for carried in outcome.value[CARRIED_KEY]:
                value = self._decode(carried, executor.id)
                if executor.allow_direct_output:
                    effects.outputs.append((executor.id, value))
                else:
                    effects.sent.append(WorkflowMessage(data=value, source_id=executor.id))
        return effects

    def _with_retries(self, start: Any) -> Generator[Any, Any, Any]:
        """Run an executor's activity, again after a durable backoff while the run's retry policy allows."""
        policy = self.hosted.retry
        attempts = policy.max_attempts if policy is not None else 1
        failures = 0
        while True:
            try:
                result = yield start()
                return result
            except Exception:
                failures += 1
                if policy is None or failures >= attempts:
                    raise
                yield self.context.create_timer(
                    self.context.current_utc_datetime + datetime.timedelta(seconds=policy.delay_seconds(failures))
                )

    # Requests for outside input

    def _wait_for_response(self) -> Generator[Any, Any, list[_ResponseDelivery]]:
        """Wait until a pending request is answered with a response of its type; that response, for its executor."""
        while True:
            for request_id in self.pending:
                if request_id not in self.waits:
                    self.waits[request_id] = self.context.wait_for_external_event(request_id)
            order = list(self.pending)
            winner = yield self.context.task_any([self.waits[request_id] for request_id in order])
            request_id = next(request_id for request_id in order if self.waits[request_id] is winner)
            request = self.pending[request_id]
            try:
                response = _response_value(winner.result, request)
            except ValueError as exc:
                # Only a caller bypassing the routes (which check) can get here; keep waiting for a valid answer.
                logger.warning("Ignored an invalid response to request %s: %s", request_id, exc)
                self.waits[request_id] = self.context.wait_for_external_event(request_id)
                continue
            del self.waits[request_id]
            del self.pending[request_id]
            self.answered = [*self.answered, request_id][-MAX_ANSWERED_IN_STATUS:]
            return [_ResponseDelivery(request.executor_id, request, response)]

    def _publish(self, status: RunStatus) -> None:
        pending = [_public_request(request) for request in self.pending.values()]
        if len(json.dumps(pending, default=str)) > MAX_STATUS_DATA_BYTES:
            pending = [{**item, "data": None, "dataOmitted": True} for item in pending]
        self.context.set_custom_status(
            {
                STATUS_KEY: status,
                SUPERSTEP_KEY: self.superstep,
                PENDING_KEY: pending,
                ANSWERED_KEY: self.answered,
                CHILDREN_KEY: dict(self.children),
            }
        )


def _public_request(request: PendingRequest) -> dict[str, Any]:
    return {
        "requestId": request.request_id,
        "executorId": request.executor_id,
        "data": to_json_output(request.data),
        "requestType": type(request.data).__name__,
        "responseType": request.response_type,
    }


def _response_value(raw: Any, request: PendingRequest) -> Any:
    body = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(body, dict) or RESPONSE_FIELD not in body:
        raise ValueError(f'a response is raised as {{"{RESPONSE_FIELD}": ...}}')
    value = body[RESPONSE_FIELD]
    if isinstance(request.data, Content):
        return coerce_response(value, Content, request.data)
    return coerce_response(value, type_at(request.response_type), request.data)


def workflow_orchestrator(hosted: HostedWorkflow, conversation_ttl_seconds: float = 0.0) -> Any:
    """The orchestrator function body of `hosted` (a generator function taking the orchestration context).

    `conversation_ttl_seconds` is how long the agent nodes' conversations may stay idle (0: never expire).
    """

    def orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, dict[str, Any]]:
        return (yield from WorkflowRun(context, hosted, conversation_ttl_seconds).run())

    return orchestrator
