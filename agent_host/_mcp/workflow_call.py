"""A workflow's MCP tool call: start a run, or read one, or answer a request one waits for; then wait and report.

Runs are started, read and answered through `WorkflowRuns`, exactly as the HTTP routes do, so a run started over MCP
reads the same over HTTP and the other way round. A call waits for the run at most `max_wait_seconds`, then returns
its outputs, the requests it waits for (with the call that answers each), or its failure. An `idempotencyKey` names
the run, so a retried call finds the run the first one started instead of starting another. Knows the extension's
invocation context and the run's public shape; nothing of how a run executes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df

from .._errors import AgentHostError, InvalidRequestError, RequestAnsweredError, internal_error
from .._http.workflow_runs import RunView, WorkflowRuns, validate_run_id
from .._settings import HostSettings
from .._workflows.contract import WorkflowRoute, type_at
from .arguments import idempotency_key_argument, require_size_within, text_argument, tool_arguments
from .tools import INPUT_PROPERTY, REQUEST_ID_PROPERTY, RESPONSE_PROPERTY, RUN_ID_PROPERTY
from .workflow_input import WorkflowInput
from .workflow_results import call_error_result, run_result

logger = logging.getLogger("agent_host.mcp")


@dataclass(frozen=True)
class WorkflowToolCall:
    """A parsed call of a workflow's tool: a start (`input`), or a read of `run_id`, answering `request_id` if given.

    Attributes:
        input: The run's input (a start only).
        run_id: The run to read or answer (None for a start).
        request_id: The request of that run to answer, if any.
        response: The answer to that request.
        idempotency_key: The caller's key for a start, if any.
    """

    input: Any = None
    run_id: str | None = None
    request_id: str | None = None
    response: Any = None
    idempotency_key: str | None = None


def parse_workflow_tool_call(
    context: str, tool_name: str, shape: WorkflowInput, max_message_bytes: int
) -> WorkflowToolCall:
    """Read the extension's invocation context for a workflow's tool.

    Raises:
        InvalidRequestError: neither input nor runId, or both; a request id without a run or a response, or a
            response without a request id; a malformed run id or key.
        MessageTooLargeError: the input or the response is over the message size limit.
    """
    arguments = tool_arguments(context)
    value = arguments.get(INPUT_PROPERTY)
    run_id = text_argument(arguments, RUN_ID_PROPERTY, "invalid_run_id")
    request_id = text_argument(arguments, REQUEST_ID_PROPERTY, "invalid_response")
    response = arguments.get(RESPONSE_PROPERTY)
    if run_id is None:
        if value is None:
            raise InvalidRequestError(
                f"Send {INPUT_PROPERTY!r} to start a run of {tool_name}, or {RUN_ID_PROPERTY!r} to read a run (and "
                "answer what it waits for).",
                code="invalid_workflow_run",
            )
        if request_id is not None or response is not None:
            raise InvalidRequestError(
                f"{REQUEST_ID_PROPERTY!r} and {RESPONSE_PROPERTY!r} answer a request of a run: send them with the "
                f"run's {RUN_ID_PROPERTY!r}, not with {INPUT_PROPERTY!r}.",
                code="invalid_workflow_run",
            )
        require_size_within(value, max_message_bytes, INPUT_PROPERTY)
        return WorkflowToolCall(input=shape.value(value), idempotency_key=idempotency_key_argument(arguments))
    if value is not None:
        raise InvalidRequestError(
            f"Send either {INPUT_PROPERTY!r} (to start a run of {tool_name}) or {RUN_ID_PROPERTY!r} (to read or "
            "answer one), not both.",
            code="invalid_workflow_run",
        )
    if (request_id is None) != (response is None):
        given, missing = (
            (REQUEST_ID_PROPERTY, RESPONSE_PROPERTY) if response is None else (RESPONSE_PROPERTY, REQUEST_ID_PROPERTY)
        )
        raise InvalidRequestError(
            f"{given!r} needs {missing!r}: answer a request by sending its requestId (from pendingRequests) and the "
            "response together.",
            code="invalid_response",
        )
    if response is not None:
        require_size_within(response, max_message_bytes, RESPONSE_PROPERTY)
    return WorkflowToolCall(run_id=validate_run_id(run_id), request_id=request_id, response=response)


async def run_workflow_tool(
    context: str,
    client: df.DurableOrchestrationClient,
    route: WorkflowRoute,
    shape: WorkflowInput,
    settings: HostSettings,
) -> str:
    """Serve one call of a workflow's tool and return the tool result (see `workflow_results.py`).

    Every failure, the call's own or the run's, is a tool error result with a code and a message; nothing raises to
    the extension, which would hide both behind a generic message.
    """
    run_id: str | None = None
    try:
        call = parse_workflow_tool_call(context, route.name, shape, settings.max_message_bytes)
        runs = WorkflowRuns(client)
        answered = None
        if call.run_id is None:
            run_id = await runs.start(route, call.input, call.idempotency_key)
        else:
            run_id = call.run_id
            if call.request_id is not None:
                answered = await _answer(runs, route, run_id, call.request_id, call.response)
        waited = settings.max_wait_seconds
        view = await runs.wait(route, await runs.view(route, run_id), waited)
        return run_result(route.name, view, waited=waited, answered=answered)
    except AgentHostError as error:
        return call_error_result(error.to_record(), workflow=route.name, run_id=run_id)
    except Exception:
        logger.exception("Unexpected error serving an MCP call of workflow %r", route.name)
        return call_error_result(internal_error().to_record(), workflow=route.name, run_id=run_id)


async def _answer(runs: WorkflowRuns, route: WorkflowRoute, run_id: str, request_id: str, response: Any) -> str:
    """Answer a request of the run and say so; a request answered before is a retry, and says that instead.

    Raises:
        AgentHostError: the run or the request is unknown, or the response does not fit the request.
    """
    view = await runs.view(route, run_id)
    try:
        await runs.answer(route, run_id, request_id, _response_value(view, request_id, response))
    except RequestAnsweredError:
        # MCP clients retry a call whose result they lost: the first answer stands and the run is reported as is.
        return f"Request {request_id} of run {run_id} was answered before this call; that answer stands."
    return f"Answered request {request_id} of run {run_id}."


def _response_value(view: RunView, request_id: str, response: Any) -> Any:
    """The answer as the request takes it: text stays text for a request that expects text, else JSON is decoded."""
    if not isinstance(response, str):
        return response
    request = view.pending_request(request_id)
    if request is not None and type_at(request.get("responseType")) is str:
        return response
    try:
        return json.loads(response)
    except ValueError:
        return response  # the answer is refused with what the request expects, if text does not fit it
