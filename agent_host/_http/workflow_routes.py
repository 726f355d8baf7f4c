"""Workflow run routes: start a run, read it, answer its requests; and the published host's workflow routes.

`POST /api/workflows/{workflow}/runs` starts a run (an `Idempotency-Key` names it, so a retry finds the same run),
`GET .../runs/{runId}` reads it, `POST .../runs/{runId}/responses/{requestId}` answers one of its pending requests
(including those of its sub-workflows, qualified `{executorId}~{n}~{requestId}`). The published host's
`workflow/{name}/run`, `status/{instanceId}` and `respond/{instanceId}/{requestId}` answer in its shapes. Every
route reads the run through the durable client's status; none knows how a run executes.
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
import azure.functions as func
from agent_framework import Content

from .._errors import (
    IdempotencyConflictError,
    InvalidRequestError,
    RequestAnsweredError,
    RequestNotFoundError,
    RunNotFoundError,
    StorageUnavailableError,
    WorkflowNotFoundError,
)
from .._settings import HostSettings
from .._workflows.codec import encode
from .._workflows.contract import (
    ANSWERED_KEY,
    CHILDREN_KEY,
    PENDING_KEY,
    RESPONSE_FIELD,
    RUN_ID_PATTERN,
    STATUS_KEY,
    WAITING_FOR_INPUT,
    ResponseBody,
    RunReadQuery,
    RunStartBody,
    WorkflowRoute,
    coerce_response,
    type_at,
)
from .requests import JSON_MEDIA_TYPE, body_text, idempotency_key, is_json_type, json_body, media_type, query
from .responses import json_response, respond

_SEPARATOR = "~"
_TERMINAL = {
    df.OrchestrationRuntimeStatus.Completed: "completed",
    df.OrchestrationRuntimeStatus.Failed: "failed",
    df.OrchestrationRuntimeStatus.Terminated: "terminated",
}
_FIRST_POLL_SECONDS = 0.01
_MAX_POLL_SECONDS = 0.05
_ACKNOWLEDGE_SECONDS = 5.0


@dataclass
class RunView:
    """A run as the routes read it: its status, outputs, error, and every pending request (children included)."""

    run_id: str
    workflow: str
    status: str
    outputs: list[Any]
    pending: list[dict[str, Any]]
    answered: list[str]
    error: dict[str, str] | None
    runtime: df.DurableOrchestrationStatus

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


class WorkflowRunClient:
    """The durable client calls the workflow routes make, with host failures as `storage_unavailable`."""

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


class WorkflowRoutes:
    """The workflow routes of one app.

    Args:
        workflows: The hosted workflows by name (filled as workflows are added).
        settings: Request limits.
    """

    def __init__(self, workflows: Mapping[str, WorkflowRoute], settings: HostSettings) -> None:
        self._workflows = workflows
        self._settings = settings

    # Our routes

    async def runs(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/workflows/{workflow}/runs`: start a run; wait for it when asked."""

        async def handle() -> func.HttpResponse:
            route = self._route(req)
            body = json_body(req, RunStartBody, self._settings.max_message_bytes, RunStartBody.shape)
            runs = WorkflowRunClient(client)
            run_id = await self._start(route, runs, body.input, idempotency_key(req))
            view = await self._view(route, runs, run_id)
            if body.wait:
                view = await self._wait(route, runs, run_id, view, body.timeout_seconds)
            return self._answer(req, route, view)

        return await respond(req, ("POST",), handle)

    async def run(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET /api/workflows/{workflow}/runs/{runId}[?timeoutSeconds=N]`: the run's status, outputs and pending
        requests; with `timeoutSeconds`, once the run stops running (or the time is up)."""

        async def handle() -> func.HttpResponse:
            route = self._route(req)
            run_id = _run_id(req.route_params.get("runId", ""))
            wait = query(req, RunReadQuery)
            runs = WorkflowRunClient(client)
            view = await self._view(route, runs, run_id)
            if wait.timeout_seconds:
                view = await self._wait(route, runs, run_id, view, wait.timeout_seconds)
            return json_response(200, view.body())

        return await respond(req, ("GET",), handle)

    async def response(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST .../runs/{runId}/responses/{requestId}`: answer a pending request (202), once."""

        async def handle() -> func.HttpResponse:
            route = self._route(req)
            run_id = _run_id(req.route_params.get("runId", ""))
            request_id = req.route_params.get("requestId", "")
            body = json_body(req, ResponseBody, self._settings.max_message_bytes, ResponseBody.shape)
            await self._answer_request(route, WorkflowRunClient(client), run_id, request_id, body.response)
            return json_response(202, {"runId": run_id, "requestId": request_id, "status": "accepted"})

        return await respond(req, ("POST",), handle)

    # The published host's routes

    async def compat_run(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/workflow/{workflow}/run`: the published host's start, with `waitForResponse`."""

        async def handle() -> func.HttpResponse:
            route = self._route(req)
            value = _compat_input(req, self._settings.max_message_bytes)
            runs = WorkflowRunClient(client)
            requested = req.params.get("runId")
            run_id = await self._start(route, runs, value, None, run_id=_run_id(requested) if requested else None)
            if _flag(req, "waitForResponse", "x-ms-wait-for-response"):
                seconds = _compat_timeout(req)
                view = await self._wait(route, runs, run_id, await self._view(route, runs, run_id), seconds)
                if view.status in ("completed", "failed"):
                    body: dict[str, Any] = {
                        "instanceId": run_id,
                        "runtimeStatus": view.runtime.runtime_status.name,
                        "output": view.outputs if view.status == "completed" else None,
                    }
                    if view.status == "failed":
                        body["error"] = view.error["message"] if view.error else None
                    return json_response(200, body)
            base = _base_url(req)
            return json_response(
                202,
                {
                    "instanceId": run_id,
                    "statusQueryGetUri": f"{base}/workflow/{route.name}/status/{run_id}",
                    "respondUri": f"{base}/workflow/{route.name}/respond/{run_id}/{{requestId}}",
                    "message": "Workflow started",
                },
            )

        return await respond(req, ("POST",), handle)

    async def compat_status(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET /api/workflow/{workflow}/status/{instanceId}`: the published host's status shape."""

        async def handle() -> func.HttpResponse:
            route = self._route(req)
            run_id = _run_id(req.route_params.get("instanceId", ""))
            view = await self._view(route, WorkflowRunClient(client), run_id)
            runtime = view.runtime
            body: dict[str, Any] = {
                "instanceId": run_id,
                "runtimeStatus": runtime.runtime_status.name,
                "customStatus": runtime.custom_status,
                "output": view.outputs if view.status == "completed" else None,
                "error": view.error["message"] if view.error else None,
                "createdTime": runtime.created_time.isoformat() if runtime.created_time else None,
                "lastUpdatedTime": runtime.last_updated_time.isoformat() if runtime.last_updated_time else None,
            }
            if view.pending:
                base = _base_url(req)
                body["pendingHumanInputRequests"] = [
                    {
                        "requestId": item["requestId"],
                        "sourceExecutor": item["executorId"],
                        "requestData": item["data"],
                        "requestType": item.get("requestType"),
                        "responseType": item.get("responseType"),
                        "respondUrl": f"{base}/workflow/{route.name}/respond/{run_id}/{item['requestId']}",
                    }
                    for item in view.pending
                ]
            return json_response(200, body)

        return await respond(req, ("GET",), handle)

    async def compat_respond(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/workflow/{workflow}/respond/{instanceId}/{requestId}`: the body is the response itself."""

        async def handle() -> func.HttpResponse:
            route = self._route(req)
            run_id = _run_id(req.route_params.get("instanceId", ""))
            request_id = req.route_params.get("requestId", "")
            value = _json_value(req, self._settings.max_message_bytes)
            await self._answer_request(route, WorkflowRunClient(client), run_id, request_id, value)
            return json_response(
                200, {"message": "Response delivered successfully", "instanceId": run_id, "requestId": request_id}
            )

        return await respond(req, ("POST",), handle)

    # Shared steps

    def _route(self, req: func.HttpRequest) -> WorkflowRoute:
        name = req.route_params.get("workflow", "")
        route = self._workflows.get(name)
        if route is None:
            raise WorkflowNotFoundError(name, sorted(self._workflows))
        return route

    async def _start(
        self,
        route: WorkflowRoute,
        runs: WorkflowRunClient,
        value: Any,
        key: str | None,
        *,
        run_id: str | None = None,
    ) -> str:
        try:
            coerced = route.coerce_input(value)
        except ValueError as exc:
            raise InvalidRequestError(f"The input does not fit: {exc}.", code="invalid_workflow_input") from None
        orchestration_input = {"input": encode(coerced)}
        if key is not None:
            # The key names the run: a retry finds the run it started instead of starting another.
            run_id = "k" + hashlib.sha256(f"{route.name}\n{key}".encode()).hexdigest()[:40]
            known = await runs.status(run_id, show_input=True)
            if known is not None:
                stored = json.loads(known.input_) if isinstance(known.input_, str) else known.input_
                if known.name != route.orchestrator_name or stored != orchestration_input:
                    raise IdempotencyConflictError(key, original_run_id=run_id)
                return run_id
        run_id = run_id or uuid.uuid4().hex
        await runs.start(route.orchestrator_name, run_id, orchestration_input)
        return run_id

    async def _view(self, route: WorkflowRoute, runs: WorkflowRunClient, run_id: str) -> RunView:
        status = await runs.status(run_id)
        if status is None or status.name != route.orchestrator_name:
            raise RunNotFoundError(route.name, run_id)
        custom = status.custom_status if isinstance(status.custom_status, dict) else {}
        state = _TERMINAL.get(status.runtime_status)
        if state is None:
            state = WAITING_FOR_INPUT if custom.get(STATUS_KEY) == WAITING_FOR_INPUT else "running"
        pending = await self._pending(runs, custom, "") if state in ("running", WAITING_FOR_INPUT) else []
        if pending and state == "running":
            # A sub-workflow waiting for input keeps its parent's superstep open: the run waits for input.
            state = WAITING_FOR_INPUT
        outputs: list[Any] = []
        error = None
        if state == "completed" and isinstance(status.output, dict):
            outputs = list(status.output.get("outputs", []))
        elif state == "failed":
            error = {"code": "workflow_failed", "message": _failure(status.output)}
        answered = list(custom.get(ANSWERED_KEY, []))
        return RunView(run_id, route.name, state, outputs, pending, answered, error, status)

    async def _pending(self, runs: WorkflowRunClient, custom: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
        found = [
            {**item, "requestId": f"{prefix}{item['requestId']}"}
            for item in custom.get(PENDING_KEY, [])
            if isinstance(item, dict)
        ]
        ordinals: dict[str, int] = {}
        for child_id, executor_id in dict(custom.get(CHILDREN_KEY, {})).items():
            ordinal = ordinals.get(executor_id, 0)
            ordinals[executor_id] = ordinal + 1
            child = await runs.status(child_id)
            if child is not None and isinstance(child.custom_status, dict) and child.runtime_status not in _TERMINAL:
                qualified = f"{prefix}{executor_id}{_SEPARATOR}{ordinal}{_SEPARATOR}"
                found.extend(await self._pending(runs, child.custom_status, qualified))
        return found

    async def _wait(
        self, route: WorkflowRoute, runs: WorkflowRunClient, run_id: str, view: RunView, seconds: float
    ) -> RunView:
        deadline = time.monotonic() + seconds
        pause = _FIRST_POLL_SECONDS
        while not view.settled and time.monotonic() < deadline:
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 1.5, _MAX_POLL_SECONDS)
            view = await self._view(route, runs, run_id)
        return view

    def _answer(self, req: func.HttpRequest, route: WorkflowRoute, view: RunView) -> func.HttpResponse:
        if view.status in _TERMINAL.values():
            return json_response(200, view.body())
        location = f"{_base_url(req)}/workflows/{route.name}/runs/{view.run_id}"
        return json_response(202, view.body(), headers={"Location": location})

    async def _answer_request(
        self, route: WorkflowRoute, runs: WorkflowRunClient, run_id: str, request_id: str, value: Any
    ) -> None:
        view = await self._view(route, runs, run_id)
        request = next((item for item in view.pending if item["requestId"] == request_id), None)
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
        owner, bare = await self._owner(runs, run_id, request_id)
        await runs.raise_response(owner, bare, value)
        # Answer once the run has taken the response, so a repeated answer reads 409 and a read after this one
        # no longer lists the request (two answers racing each other can still both be accepted; the run takes
        # the first).
        deadline = time.monotonic() + _ACKNOWLEDGE_SECONDS
        pause = _FIRST_POLL_SECONDS
        while time.monotonic() < deadline:
            view = await self._view(route, runs, run_id)
            if all(item["requestId"] != request_id for item in view.pending):
                return
            await asyncio.sleep(pause)
            pause = min(pause * 1.5, _MAX_POLL_SECONDS)

    async def _owner(self, runs: WorkflowRunClient, instance_id: str, request_id: str) -> tuple[str, str]:
        """The instance that waits for a (possibly qualified) request id, and the request's own id."""
        parts = request_id.split(_SEPARATOR, 2)
        if len(parts) < 3 or not parts[1].isdigit():
            return instance_id, request_id
        executor_id, ordinal, rest = parts[0], int(parts[1]), parts[2]
        status = await runs.status(instance_id)
        custom = status.custom_status if status is not None and isinstance(status.custom_status, dict) else {}
        children = [child for child, owner in dict(custom.get(CHILDREN_KEY, {})).items() if owner == executor_id]
        if ordinal >= len(children):
            return instance_id, request_id
        return await self._owner(runs, children[ordinal], rest)


def _request_data(request: Mapping[str, Any]) -> Any:
    data = request.get("data")
    if request.get("requestType") == "Content" and isinstance(data, dict):
        return Content.from_dict(data)
    return data


def _failure(output: Any) -> str:
    text = output if isinstance(output, str) else str(output or "")
    return text.split("\n", 1)[0].strip() or "The workflow run failed."


def _run_id(value: str) -> str:
    if not re.fullmatch(RUN_ID_PATTERN, value or ""):
        raise InvalidRequestError(
            f"Run id {value!r} is not 1-64 letters, digits, '_' or '-' starting with a letter or digit; use the "
            "runId a start returned.",
            code="invalid_run_id",
        )
    return value


def _base_url(req: func.HttpRequest) -> str:
    """The request's URL up to and including the route prefix (`http://host:port/api`)."""
    url = req.url.split("?", 1)[0]
    marker = "/workflow"
    return url[: url.index(marker)] if marker in url else url.rstrip("/")


def _json_value(req: func.HttpRequest, max_bytes: int) -> Any:
    text = body_text(req, max_bytes)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidRequestError(f"The body is not valid JSON: {exc}.", code="invalid_json") from None


def _compat_input(req: func.HttpRequest, max_bytes: int) -> Any:
    """The published host's run input: a JSON body, or the text of any other body."""
    media = media_type(req)
    if not media or is_json_type(media):
        try:
            return _json_value(req, max_bytes)
        except InvalidRequestError:
            if media == JSON_MEDIA_TYPE:
                raise
    text = body_text(req, max_bytes)
    if not text:
        raise InvalidRequestError("The body is empty: send the workflow's input.", code="invalid_workflow_run")
    return text


def _flag(req: func.HttpRequest, query_name: str, header: str) -> bool:
    """The published host's boolean switch: its header when that reads as a boolean, else its query parameter."""
    from_header = _boolean(req.headers.get(header))
    if from_header is not None:
        return from_header
    value = req.params.get(query_name)
    if value is None:
        return False
    parsed = _boolean(value)
    if parsed is None:
        raise InvalidRequestError(f"'{query_name}' must be a boolean value.", code="invalid_query")
    return parsed


def _boolean(value: str | None) -> bool | None:
    lowered = (value or "").strip().lower()
    if lowered in ("true", "1", "yes", "y", "on"):
        return True
    if lowered in ("false", "0", "no", "n", "off"):
        return False
    return None


def _compat_timeout(req: func.HttpRequest) -> float:
    value = req.params.get("timeoutSeconds")
    if value is None:
        return 10.0
    if not value.isdigit() or not 1 <= int(value) <= 200:
        raise InvalidRequestError("'timeoutSeconds' must be an integer between 1 and 200.", code="invalid_timeout")
    return float(value)
