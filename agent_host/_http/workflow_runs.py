"""Workflow runs through the durable client: start one, read it, wait for it, answer one of its pending requests.

Every trigger that serves workflow runs (the HTTP routes, the MCP workflow tools) goes through `WorkflowRuns`, so a
run started or answered one way reads the same the other way. A run is read through the orchestration's status
alone; nothing here knows how a run executes, or which trigger asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import azure.durable_functions as df
from agent_framework import Content

from .._errors import (
    IdempotencyConflictError,
    InvalidRequestError,
    RequestAnsweredError,
    RequestNotFoundError,
    RunNotFoundError,
    StorageUnavailableError,
)
from .._workflows.codec import encode
from .._workflows.contract import (
    ANSWERED_KEY,
    CHILDREN_KEY,
    OUTPUTS_KEY,
    PENDING_KEY,
    PRODUCERS_KEY,
    RESPONSE_FIELD,
    RUN_ID_PATTERN,
    STATUS_KEY,
    WAITING_FOR_INPUT,
    WorkflowRoute,
    coerce_response,
    type_at,
)

_SEPARATOR = "~"
TERMINAL_STATUSES = {
    df.OrchestrationRuntimeStatus.Completed: "completed",
    df.OrchestrationRuntimeStatus.Failed: "failed",
    df.OrchestrationRuntimeStatus.Terminated: "terminated",
}
_FIRST_POLL_SECONDS = 0.01
_MAX_POLL_SECONDS = 0.05
_ACKNOWLEDGE_SECONDS = 5.0


@dataclass
class RunView:
    """A run as its readers see it: its status, outputs, error, and every pending request (children included)."""

    run_id: str
    workflow: str
    status: str
    outputs: list[Any]
    pending: list[dict[str, Any]]
    answered: list[str]
    error: dict[str, str] | None
    runtime: df.DurableOrchestrationStatus
    # The executor that yielded each output (None for a run an older version of this host finished).
    producers: list[str] | None = None

    def outputs_without(self, executor_ids: frozenset[str]) -> list[Any]:
        """The outputs yielded by executors other than these (agent-framework-azurefunctions' outputs leave out
        the agent nodes' answers)."""
        if self.producers is None or len(self.producers) != len(self.outputs):
            return self.outputs
        return [
            output
            for output, producer in zip(self.outputs, self.producers, strict=True)
            if producer not in executor_ids
        ]

    def body(self) -> dict[str, Any]:
        """The run as `GET .../runs/{runId}` shows it."""
        return {
            "runId": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "outputs": self.outputs,
            "pendingRequests": [
                {"requestId": item["requestId"], "executorId": item["executorId"], "data": item["data"]}
                for item in self.pending
            ],
            "error": self.error,
        }

    @property
    def settled(self) -> bool:
        """Whether a waiting caller can stop: the run ended or waits for input."""
        return self.status != "running"

    @property
    def ended(self) -> bool:
        """Whether the run ended (completed, failed or terminated)."""
        return self.status in TERMINAL_STATUSES.values()

    def pending_request(self, request_id: str) -> dict[str, Any] | None:
        """The pending request of that id, as the run's status lists it, or None."""
        return next((item for item in self.pending if item["requestId"] == request_id), None)


class WorkflowRunClient:
    """The durable client calls workflow runs take, with host failures as `storage_unavailable`."""

    def __init__(self, client: df.DurableOrchestrationClient) -> None:
        self._client = client

    async def status(self, instance_id: str, *, show_input: bool = False) -> df.DurableOrchestrationStatus | None:
        """The instance's status, or None when it does not exist."""
        try:
            status = await self._client.get_status(instance_id, show_input=show_input)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None
        return status if status is not None and status.runtime_status is not None else None

    async def start(self, orchestrator: str, instance_id: str, orchestration_input: dict[str, Any]) -> None:
        """Start the orchestration under `instance_id`."""
        try:
            await self._client.start_new(orchestrator, instance_id=instance_id, client_input=orchestration_input)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None

    async def raise_response(self, instance_id: str, request_id: str, response: Any) -> None:
        """Raise the response to `request_id` on the instance waiting for it."""
        try:
            await self._client.raise_event(instance_id, request_id, {RESPONSE_FIELD: response})
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None


class WorkflowRuns:
    """Start, read, wait for and answer the runs of hosted workflows, through one durable client.

    Args:
        client: The durable client binding of the invocation.
    """

    def __init__(self, client: df.DurableOrchestrationClient) -> None:
        self._runs = WorkflowRunClient(client)

    async def start(
        self, route: WorkflowRoute, value: Any, key: str | None, *, run_id: str | None = None, published: bool = False
    ) -> str:
        """Start a run of `route` with `value` as its input and return its run id.

        An idempotency key names the run: a retry with the same key and input finds the run it started instead of
        starting another. `published`: the input came through agent-framework-azurefunctions' route, and is read
        as that host reads it.

        Raises:
            InvalidRequestError: the start executor takes no input of that shape (`invalid_workflow_input`).
            IdempotencyConflictError: the key's run has another input (or belongs to another workflow).
        """
        try:
            coerced = route.coerce_input(value, published=published)
        except ValueError as exc:
            raise InvalidRequestError(f"The input does not fit: {exc}.", code="invalid_workflow_input") from None
        orchestration_input = {"input": encode(coerced)}
        if key is not None:
            run_id = "k" + hashlib.sha256(f"{route.name}\n{key}".encode()).hexdigest()[:40]
            known = await self._runs.status(run_id, show_input=True)
            if known is not None:
                stored = json.loads(known.input_) if isinstance(known.input_, str) else known.input_
                if known.name != route.orchestrator_name or stored != orchestration_input:
                    raise IdempotencyConflictError(key, original_run_id=run_id)
                return run_id
        run_id = run_id or uuid.uuid4().hex
        await self._runs.start(route.orchestrator_name, run_id, orchestration_input)
        return run_id

    async def view(self, route: WorkflowRoute, run_id: str) -> RunView:
        """The run as it stands.

        Raises:
            RunNotFoundError: no run of this workflow has that id.
        """
        status = await self._runs.status(run_id)
        if status is None or status.name != route.orchestrator_name:
            raise RunNotFoundError(route.name, run_id)
        custom = status.custom_status if isinstance(status.custom_status, dict) else {}
        state = TERMINAL_STATUSES.get(status.runtime_status)
        if state is None:
            state = WAITING_FOR_INPUT if custom.get(STATUS_KEY) == WAITING_FOR_INPUT else "running"
        pending = await self._pending(custom, "") if state in ("running", WAITING_FOR_INPUT) else []
        if pending and state == "running":
            # A sub-workflow waiting for input keeps its parent's superstep open: the run waits for input.
            state = WAITING_FOR_INPUT
        outputs: list[Any] = []
        producers: list[str] | None = None
        error = None
        if state == "completed" and isinstance(status.output, dict):
            outputs = list(status.output.get(OUTPUTS_KEY, []))
            if isinstance(status.output.get(PRODUCERS_KEY), list):
                producers = list(status.output[PRODUCERS_KEY])
        elif state == "failed":
            error = {"code": "workflow_failed", "message": _failure(status.output)}
        answered = list(custom.get(ANSWERED_KEY, []))
        return RunView(run_id, route.name, state, outputs, pending, answered, error, status, producers)

    async def _pending(self, custom: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
        found = [
            {**item, "requestId": f"{prefix}{item['requestId']}"}
            for item in custom.get(PENDING_KEY, [])
            if isinstance(item, dict)
        ]
        ordinals: dict[str, int] = {}
        for child_id, executor_id in dict(custom.get(CHILDREN_KEY, {})).items():
            ordinal = ordinals.get(executor_id, 0)
            ordinals[executor_id] = ordinal + 1
            child = await self._runs.status(child_id)
            if (
                child is not None
                and isinstance(child.custom_status, dict)
                and child.runtime_status not in TERMINAL_STATUSES
            ):
                qualified = f"{prefix}{executor_id}{_SEPARATOR}{ordinal}{_SEPARATOR}"
                found.extend(await self._pending(child.custom_status, qualified))
        return found

    async def wait(self, route: WorkflowRoute, view: RunView, seconds: float) -> RunView:
        """The run once it stops running (ends or waits for input), or as it stands after `seconds`."""
        deadline = time.monotonic() + seconds
        pause = _FIRST_POLL_SECONDS
        while not view.settled and time.monotonic() < deadline:
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 1.5, _MAX_POLL_SECONDS)
            view = await self.view(route, view.run_id)
        return view

    async def answer(self, route: WorkflowRoute, run_id: str, request_id: str, value: Any) -> None:
        """Answer one pending request of the run (a sub-workflow's too) and return once the run has taken it.

        Raises:
            RunNotFoundError: no run of this workflow has that id.
            RequestAnsweredError: the request was answered already.
            RequestNotFoundError: the run waits for no request of that id.
            InvalidRequestError: the value is not of the request's response type (`invalid_response`).
        """
        view = await self.view(route, run_id)
        request = view.pending_request(request_id)
        if request is None:
            if request_id in view.answered:
                raise RequestAnsweredError(run_id, request_id)
            raise RequestNotFoundError(run_id, request_id, [item["requestId"] for item in view.pending])
        try:
            coerce_response(value, type_at(request.get("responseType")), _request_data(request))
        except ValueError as exc:
            raise InvalidRequestError(
                f"The response to request '{request_id}' does not fit: {exc}.", code="invalid_response"
            ) from None
        owner, bare = await self._owner(run_id, request_id)
        await self._runs.raise_response(owner, bare, value)
        # Answer once the run has taken the response, so a repeated answer reads 409 and a read after this one
        # no longer lists the request (two answers racing each other can still both be accepted; the run takes
        # the first).
        deadline = time.monotonic() + _ACKNOWLEDGE_SECONDS
        pause = _FIRST_POLL_SECONDS
        while time.monotonic() < deadline:
            view = await self.view(route, run_id)
            if view.pending_request(request_id) is None:
                return
            await asyncio.sleep(pause)
            pause = min(pause * 1.5, _MAX_POLL_SECONDS)

    async def _owner(self, instance_id: str, request_id: str) -> tuple[str, str]:
        """The instance that waits for a (possibly qualified) request id, and the request's own id."""
        parts = request_id.split(_SEPARATOR, 2)
        if len(parts) < 3 or not parts[1].isdigit():
            return instance_id, request_id
        executor_id, ordinal, rest = parts[0], int(parts[1]), parts[2]
        status = await self._runs.status(instance_id)
        custom = status.custom_status if status is not None and isinstance(status.custom_status, dict) else {}
        children = [child for child, owner in dict(custom.get(CHILDREN_KEY, {})).items() if owner == executor_id]
        if ordinal >= len(children):
            return instance_id, request_id
        return await self._owner(children[ordinal], rest)


def validate_run_id(value: str, *, name: str = "Run id") -> str:
    """A run id as a caller sent it (`name` says where), checked.

    Raises:
        InvalidRequestError: it is not 1-100 letters, digits, `.`, `_`, `-`, `:` or `~` starting with a letter or
            digit (`invalid_run_id`).
    """
    if not is_run_id(value):
        shown = value if len(str(value)) <= 110 else f"{str(value)[:110]}..."
        raise InvalidRequestError(
            f"{name} {shown!r} is not 1-100 letters, digits, '.', '_', '-', ':' or '~' starting with a letter or "
            "digit; use the runId a start returned.",
            code="invalid_run_id",
        )
    return value


def is_run_id(value: object) -> bool:
    """Whether `value` is an id a run can have."""
    return isinstance(value, str) and re.fullmatch(RUN_ID_PATTERN, value) is not None


def _request_data(request: Mapping[str, Any]) -> Any:
    data = request.get("data")
    if request.get("requestType") == "Content" and isinstance(data, dict):
        return Content.from_dict(data)
    return data


def _failure(output: Any) -> str:
    text = output if isinstance(output, str) else str(output or "")
    return text.split("\n", 1)[0].strip() or "The workflow run failed."
