"""A workflow tool's results: a run's outputs as text, the requests it waits for and how to answer them, its failure.

`structuredContent` is the run as `GET /api/workflows/{workflow}/runs/{runId}` shows it (`runId`, `workflow`, `status`,
`outputs`, `pendingRequests`, `error`); the text blocks say the same for a model, and exactly which call comes next.
Knows the run's public shape and the MCP result; nothing of how a run executes.
"""

from __future__ import annotations

import json
from typing import Any

from agent_framework import AgentResponse, Message

from .._http.workflow_runs import RunView
from .._workflows.contract import type_at
from .results import tool_result
from .tools import REQUEST_ID_PROPERTY, RESPONSE_PROPERTY, RUN_ID_PROPERTY
from .workflow_input import schema_text

TERMINATED_CODE = "workflow_terminated"
# What a caller sends for the response types a request names most often; anything else is described by its type.
_EXPECTED: dict[type, tuple[str, str]] = {
    bool: ("true or false", "true"),
    str: ("text", '"..."'),
    int: ("an integer", "1"),
    float: ("a number", "1.5"),
}
_APPROVAL_REQUEST = "function_approval_request"


def output_text(output: Any) -> str:
    """One output as a model reads it: text as it is, an agent's response or message as its text, else JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and output.get("type") in ("agent_response", "message"):
        parsed = AgentResponse.from_dict(output) if output["type"] == "agent_response" else Message.from_dict(output)
        if parsed.text:
            return parsed.text
    return json.dumps(output, ensure_ascii=False)


def run_result(tool_name: str, view: RunView, *, waited: float, answered: str | None = None) -> str:
    """The result of a call that started, read or answered a run, given the run after the call's wait.

    Args:
        tool_name: The workflow's tool (its name).
        view: The run.
        waited: How long the call waited for the run, for a run still running.
        answered: The text saying which request this call answered, if it answered one.
    """
    body = view.body()
    run_id, status = view.run_id, view.status
    texts = [answered] if answered else []
    read_again = f"call {tool_name} with {json.dumps({RUN_ID_PROPERTY: run_id})}"
    if status == "completed":
        outputs = body["outputs"]
        texts.extend(output_text(output) for output in outputs)
        texts.append(
            f"Run {run_id} of workflow {tool_name} completed with {len(outputs)} output(s) (to read it again, "
            f"{read_again})."
        )
        return tool_result(texts, body, is_error=False)
    if status == "waiting_for_input":
        texts.extend(_waiting_texts(tool_name, run_id, view.pending))
        return tool_result(texts, body, is_error=False)
    if status == "running":
        # An error result, so a caller that checks isError does not take "still running" for the outputs.
        texts.append(
            f"Run {run_id} of workflow {tool_name} is still running after {waited:g} s. It goes on without this call: "
            f"{read_again} to wait for its outputs again."
        )
        return tool_result(texts, body, is_error=True)
    error = view.error or {
        "code": TERMINATED_CODE,
        "message": f"Run {run_id} of workflow {tool_name} was terminated before it finished.",
    }
    texts.append(f"{error['code']}: {error['message']}")
    return tool_result(texts, {**body, "error": error}, is_error=True)


def call_error_result(error: dict[str, str], *, workflow: str, run_id: str | None = None) -> str:
    """A call the host refused or could not serve: the error's code and message (the run's id when known)."""
    structured: dict[str, Any] = {"status": "failed", "workflow": workflow, "error": error}
    if run_id is not None:
        structured["runId"] = run_id
    return tool_result([f"{error['code']}: {error['message']}"], structured, is_error=True)


def _waiting_texts(tool_name: str, run_id: str, pending: list[dict[str, Any]]) -> list[str]:
    """What a run waiting for input asks, one text per request, each with the exact call that answers it."""
    texts = [
        f"Run {run_id} of workflow {tool_name} waits for human input: {len(pending)} pending request(s). Ask for "
        f"each answer, then call {tool_name} with {RUN_ID_PROPERTY}, {REQUEST_ID_PROPERTY} and {RESPONSE_PROPERTY}; "
        "that call waits for the run again and returns its outputs or its next requests. Over HTTP: POST "
        f'/api/workflows/{tool_name}/runs/{run_id}/responses/{{requestId}} with {{"response": ...}}.'
    ]
    for request in pending:
        request_id = request["requestId"]
        asks, expected, example = _described_request(request["data"], request.get("responseType"))
        # The example is JSON text already (or a placeholder such as {...}): spliced in, not encoded again.
        ids = json.dumps({RUN_ID_PROPERTY: run_id, REQUEST_ID_PROPERTY: request_id})
        call = f'{ids[:-1]}, "{RESPONSE_PROPERTY}": {example}}}'
        texts.append(
            f"Request {request_id} from executor {request['executorId']} {asks}. It expects {expected}. Answer: call "
            f"{tool_name} with {call}."
        )
    return texts


def _described_request(data: Any, response_type: str | None) -> tuple[str, str, str]:
    """What a request asks, what its answer is (in words), and an example answer (JSON) for the call that sends it."""
    if isinstance(data, dict) and data.get("type") == _APPROVAL_REQUEST:
        call = data.get("function_call") or {}
        arguments = call.get("arguments")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        tool = f"{call.get('name', 'a tool')}({shown})"
        return (
            f"asks for approval to call {tool}",
            '{"approved": true} to let the agent call it, or {"approved": false} to refuse',
            '{"approved": true}',
        )
    asks = f"asks: {json.dumps(data, ensure_ascii=False)}"
    cls = type_at(response_type)
    if cls in _EXPECTED:
        return (asks, *_EXPECTED[cls])
    if cls is not None:
        return asks, f"a JSON value {schema_text(cls)}", "{...}"
    return asks, "a JSON value", "..."
