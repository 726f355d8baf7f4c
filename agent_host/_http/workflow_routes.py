"""Workflow run routes: start a run, read it, answer its requests; and the published host's workflow routes.

`POST /api/workflows/{workflow}/runs` starts a run (an `Idempotency-Key` names it, so a retry finds the same run),
`GET .../runs/{runId}` reads it, `POST .../runs/{runId}/responses/{requestId}` answers one of its pending requests
(including those of its sub-workflows, qualified `{executorId}~{n}~{requestId}`). The published host's
`workflow/{name}/run`, `status/{instanceId}` and `respond/{instanceId}/{requestId}` answer in its shapes. Every
route goes through `workflow_runs.WorkflowRuns`; none knows how a run executes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from .._errors import InvalidRequestError, RunNotFoundError, WorkflowNotFoundError
from .._settings import HostSettings
from .._workflows.contract import ResponseBody, RunReadQuery, RunStartBody, WorkflowRoute
from .requests import (
    JSON_MEDIA_TYPE,
    body_text,
    idempotency_key,
    is_json_type,
    json_body,
    json_value,
    media_type,
    query,
)
from .responses import json_response
from .workflow_runs import (
    RunView,
    WorkflowRuns,
    is_run_id,
    validate_run_id,
)


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
        route = self._route(req)
        body = json_body(req, RunStartBody, self._settings.max_message_bytes, RunStartBody.shape)
        runs = WorkflowRuns(client)
        run_id = await runs.start(route, body.input, idempotency_key(req))
        view = await runs.view(route, run_id)
        if body.wait:
            view = await runs.wait(route, view, body.timeout_seconds)
        return self._answer(req, route, view)

    async def run(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET /api/workflows/{workflow}/runs/{runId}[?timeoutSeconds=N]`: the run's status, outputs and pending
        requests; with `timeoutSeconds`, once the run stops running (or the time is up)."""
        route = self._route(req)
        run_id = validate_run_id(req.route_params.get("runId", ""))
        wait = query(req, RunReadQuery)
        runs = WorkflowRuns(client)
        view = await runs.view(route, run_id)
        if wait.timeout_seconds:
            view = await runs.wait(route, view, wait.timeout_seconds)
        return json_response(200, view.body())

    async def response(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST .../runs/{runId}/responses/{requestId}`: answer a pending request (202), once."""
        route = self._route(req)
        run_id = validate_run_id(req.route_params.get("runId", ""))
        request_id = req.route_params.get("requestId", "")
        body = json_body(req, ResponseBody, self._settings.max_message_bytes, ResponseBody.shape)
        await WorkflowRuns(client).answer(route, run_id, request_id, body.response)
        return json_response(202, {"runId": run_id, "requestId": request_id, "status": "accepted"})

    # The published host's routes

    async def compat_run(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/workflow/{workflow}/run`: the published host's start, with `waitForResponse`."""
        route = self._route(req)
        value = _compat_input(req, self._settings.max_message_bytes)
        runs = WorkflowRuns(client)
        requested = req.params.get("runId")
        run_id = await runs.start(
            route,
            value,
            None,
            run_id=validate_run_id(requested, name="'runId'") if requested else None,
            published=True,
        )
        if _flag(req, "waitForResponse", "x-ms-wait-for-response"):
            seconds = _compat_timeout(req)
            view = await runs.wait(route, await runs.view(route, run_id), seconds)
            if view.status in ("completed", "failed"):
                body: dict[str, Any] = {
                    "instanceId": run_id,
                    "runtimeStatus": view.runtime.runtime_status.name,
                    "output": _published_output(route, view),
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

    async def compat_status(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET /api/workflow/{workflow}/status/{instanceId}`: the published host's status shape."""
        route = self._route(req)
        run_id = _published_path_run_id(req, route)
        view = await WorkflowRuns(client).view(route, run_id)
        runtime = view.runtime
        body: dict[str, Any] = {
            "instanceId": run_id,
            "runtimeStatus": runtime.runtime_status.name,
            "customStatus": runtime.custom_status,
            "output": _published_output(route, view),
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

    async def compat_respond(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`POST /api/workflow/{workflow}/respond/{instanceId}/{requestId}`: the body is the response itself."""
        route = self._route(req)
        run_id = _published_path_run_id(req, route)
        request_id = req.route_params.get("requestId", "")
        value = _json_value(req, self._settings.max_message_bytes)
        await WorkflowRuns(client).answer(route, run_id, request_id, value)
        return json_response(
            200, {"message": "Response delivered successfully", "instanceId": run_id, "requestId": request_id}
        )

    # Shared steps

    def _route(self, req: func.HttpRequest) -> WorkflowRoute:
        name = req.route_params.get("workflow", "")
        route = self._workflows.get(name)
        if route is None:
            raise WorkflowNotFoundError(name, sorted(self._workflows))
        return route

    def _answer(self, req: func.HttpRequest, route: WorkflowRoute, view: RunView) -> func.HttpResponse:
        if view.ended:
            return json_response(200, view.body())
        location = f"{_base_url(req)}/workflows/{route.name}/runs/{view.run_id}"
        return json_response(202, view.body(), headers={"Location": location})


def _published_output(route: WorkflowRoute, view: RunView) -> list[Any] | None:
    """A finished run's output as agent-framework-azurefunctions shows it: what the non-agent executors yielded."""
    return view.outputs_without(route.agent_executor_ids) if view.status == "completed" else None


def _published_path_run_id(req: func.HttpRequest, route: WorkflowRoute) -> str:
    """The run id in a published route's path; one no run can have is not found, as that host answers it.

    Raises:
        RunNotFoundError: the id is not one a run can have.
    """
    run_id = req.route_params.get("instanceId", "")
    if not is_run_id(run_id):
        raise RunNotFoundError(route.name, run_id[:110])
    return run_id


def _base_url(req: func.HttpRequest) -> str:
    """The request's URL up to and including the route prefix (`http://host:port/api`)."""
    url = req.url.split("?", 1)[0]
    marker = "/workflow"
    return url[: url.index(marker)] if marker in url else url.rstrip("/")


def _json_value(req: func.HttpRequest, max_bytes: int) -> Any:
    return json_value(body_text(req, max_bytes), "any JSON value")


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
