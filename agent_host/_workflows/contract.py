"""The workflow run's wire contract: HTTP bodies, the orchestration's input and custom status, and response coercion.

Both the HTTP side (which starts runs, reads their status and raises responses) and the orchestrator (which writes
the status and waits for responses) speak these shapes; neither imports the other. Knows core's workflow types
and the wire format, nothing about how a run executes.
"""

from __future__ import annotations

import builtins
import importlib
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from agent_framework import AgentExecutor, Content, Workflow
from pydantic import Field, StrictBool, field_validator

from .._contract import WireModel
from .._deps.agent_framework_workflows_private import is_instance_of, try_coerce_to_type

WORKFLOW_NAME_PATTERN = r"[A-Za-z][A-Za-z0-9_-]{0,63}"
# Up to 100 characters, as agent-framework-azurefunctions' `runId`, of those that travel in a URL path unescaped
# (the durable client puts instance ids in its URLs as they are): letters, digits, `.`, `_`, `-`, `:` and `~`.
RUN_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:~-]{0,99}"
MAX_WAIT_SECONDS = 230.0
DEFAULT_WAIT_SECONDS = 30.0

RunStatus = Literal["running", "waiting_for_input", "completed", "failed", "terminated"]
RUNNING: RunStatus = "running"
WAITING_FOR_INPUT: RunStatus = "waiting_for_input"

# Keys of the orchestration's custom status (capped at 16 KB by the host, so request data is shortened past that).
STATUS_KEY = "status"
SUPERSTEP_KEY = "superstep"
PENDING_KEY = "pendingRequests"
ANSWERED_KEY = "answeredRequests"
CHILDREN_KEY = "subWorkflows"
# How many answered request ids the status remembers (to answer 409 rather than 404 for a repeated answer).
MAX_ANSWERED_IN_STATUS = 100
# The event a response is raised as on the run that owns the request: the request id itself.
RESPONSE_FIELD = "response"
# Keys of a run's result: its outputs, and the executor that yielded each.
OUTPUTS_KEY = "outputs"
PRODUCERS_KEY = "producers"
# What an executor activity is told about the run it belongs to, under agent-framework-azurefunctions' names
# (`WorkflowHitlContext.from_context` reads it): the addressable top-level run, and the `{executorId}~{n}~` path
# of sub-workflows down to this one.
HOST_METADATA_KEY = "host"
HOST_INSTANCE_ID = "instance_id"
HOST_WORKFLOW_NAME = "workflow_name"
HOST_REQUEST_PATH_PREFIX = "request_path_prefix"


@dataclass(frozen=True)
class WorkflowRoute:
    """What the HTTP side knows of a hosted workflow: its name, its orchestrator, and the start executor's input."""

    name: str
    orchestrator_name: str
    workflow: Workflow = field(repr=False)

    @property
    def agent_executor_ids(self) -> frozenset[str]:
        """The ids of the workflow's agent nodes (whose answers agent-framework-azurefunctions never outputs)."""
        return frozenset(
            key for key, executor in self.workflow.executors.items() if isinstance(executor, AgentExecutor)
        )

    def coerce_input(self, value: Any, *, published: bool = False) -> Any:
        """The run's input as the start executor takes it (JSON coerced to its input type).

        A start executor that is an agent takes a JSON object or list as its JSON text, as
        agent-framework-azurefunctions gives it to the agent: on the published routes (`published`) always, on ours
        when it is no other input the agent takes.

        Raises:
            ValueError: the start executor takes no input of that shape.
        """
        start = self.workflow.get_start_executor()
        as_text = isinstance(start, AgentExecutor) and isinstance(value, dict | list)
        if as_text and published:
            return json.dumps(value)
        for input_type in start.input_types:
            coerced = try_coerce_to_type(value, input_type)
            if is_instance_of(coerced, input_type):
                return coerced
        if as_text:
            return json.dumps(value)
        names = ", ".join(type_label(item) for item in start.input_types) or "nothing"
        raise ValueError(
            f"workflow '{self.name}' starts at executor '{start.id}', which takes {names}; "
            f"the input given is a JSON {type_label(type(value))}"
        )


class RunStartBody(WireModel):
    """Body of `POST /api/workflows/{workflow}/runs`."""

    error_code: ClassVar[str] = "invalid_workflow_run"
    field_codes: ClassVar[dict[str, str]] = {"timeoutSeconds": "invalid_timeout"}
    shape: ClassVar[str] = '{"input": <the start executor\'s input>, "wait": boolean, "timeoutSeconds": number}'

    input: Any = Field(...)
    wait: StrictBool = True
    timeout_seconds: float = DEFAULT_WAIT_SECONDS

    @field_validator("timeout_seconds")
    @classmethod
    def _bounded(cls, value: float) -> float:
        if not 0 < value <= MAX_WAIT_SECONDS:
            raise ValueError(f"timeoutSeconds must be more than 0 and at most {MAX_WAIT_SECONDS:g}")
        return value


class RunReadQuery(WireModel):
    """Query of `GET /api/workflows/{workflow}/runs/{runId}`: how long to wait while the run is running."""

    error_code: ClassVar[str] = "invalid_timeout"
    lenient_types: ClassVar[bool] = True
    shape: ClassVar[str] = "?timeoutSeconds=<seconds, at most 230>"

    timeout_seconds: float | None = None

    @field_validator("timeout_seconds")
    @classmethod
    def _bounded(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value <= MAX_WAIT_SECONDS:
            raise ValueError(f"timeoutSeconds must be more than 0 and at most {MAX_WAIT_SECONDS:g}")
        return value


class ResponseBody(WireModel):
    """Body of `POST /api/workflows/{workflow}/runs/{runId}/responses/{requestId}`."""

    error_code: ClassVar[str] = "invalid_response"
    shape: ClassVar[str] = '{"response": <a value of the request\'s response type>}'

    response: Any


def type_label(cls: Any) -> str:
    """A type's name as a caller reads it."""
    return getattr(cls, "__name__", None) or str(cls)


def type_path(cls: Any) -> str | None:
    """Where a response type lives (`module:qualname`), or None for a type that cannot be named."""
    if not isinstance(cls, type):
        return None
    return f"{cls.__module__}:{cls.__qualname__}"


def type_at(path: str | None) -> type | None:
    """The type `type_path` named, or None when it cannot be found (the response is then taken as JSON)."""
    if not path:
        return None
    module_name, _, qualname = path.partition(":")
    try:
        target: Any = builtins if module_name == "builtins" else importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        return None
    return target if isinstance(target, type) else None


def coerce_response(value: Any, response_type: type | None, request: Any) -> Any:
    """A caller's JSON response as the requesting executor's response handler takes it.

    A tool approval (`function_approval_request`) accepts `{"approved": true|false}` or core's approval response;
    text answers a `Content` request; anything else is coerced to the response type as core does.

    Raises:
        ValueError: the value is not of the response type, naming both.
    """
    if isinstance(request, Content) and request.type == "function_approval_request":
        return _approval_response(value, request)
    if response_type is None:
        return value
    if response_type is Content and isinstance(value, str):
        return Content.from_text(text=value)
    if response_type is Content and isinstance(value, dict):
        return Content.from_dict(value)
    coerced = try_coerce_to_type(value, response_type)
    if not is_instance_of(coerced, response_type):
        raise ValueError(
            f"the request expects a {type_label(response_type)}; a JSON {type_label(type(value))} cannot be one"
        )
    return coerced


def _approval_response(value: Any, request: Content) -> Content:
    if isinstance(value, dict) and set(value) == {"approved"} and isinstance(value["approved"], bool):
        return request.to_function_approval_response(value["approved"])
    if isinstance(value, dict) and value.get("type") == "function_approval_response":
        answer = Content.from_dict(value)
        if answer.id == request.id and isinstance(answer.approved, bool):
            return answer
    raise ValueError('a tool approval is answered with {"approved": true} or {"approved": false}')
