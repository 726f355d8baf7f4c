"""Hosting a core `Workflow`: checking it can run as an orchestration, and naming its durable functions.

A workflow is used as built: nothing in it changes. Its agent nodes (`AgentExecutor`s) get one conversation entity
function each, other executors run in one activity function per workflow, and each workflow (sub-workflows too)
gets one orchestrator function. What a replayed orchestration cannot do is refused here, at startup, with a
message naming the workflow and the feature. Knows core's workflow graph and the host's naming; no HTTP.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_framework import (
    AgentExecutor,
    Executor,
    FanInEdgeGroup,
    FanOutEdgeGroup,
    SingleEdgeGroup,
    SubWorkflowRequestMessage,
    SwitchCaseEdgeGroup,
    SwitchCaseEdgeGroupCase,
    Workflow,
    WorkflowExecutor,
)

from .._deps.agent_framework_workflows_private import (
    InternalEdgeGroup,
    agent_context_filter,
    agent_context_mode,
    edge_condition,
    ensure_trailing_user_turn,
    is_instance_of,
)
from .._event_loop import AGENT_LOOP
from .codec import UncarriableValueError, encode
from .contract import WORKFLOW_NAME_PATTERN

# The name WorkflowBuilder makes up when given none: new on every build, so no run could find its workflow again.
_GENERATED_NAME = re.compile(r"WorkflowBuilder-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_FUNCTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,127}")
_UNSAFE = re.compile(r"[^a-z0-9_-]")
_SUPPORTED_EDGE_GROUPS = (SingleEdgeGroup, SwitchCaseEdgeGroup, FanOutEdgeGroup, FanInEdgeGroup, InternalEdgeGroup)


@dataclass(frozen=True)
class WorkflowRetryPolicy:
    """Retries of an executor's activity or an agent node's turn after a failure, with a growing durable backoff.

    Attributes:
        max_attempts: Attempts in all (the first included); 1 means no retry.
        first_interval_seconds: The wait before the second attempt.
        backoff_coefficient: Each later wait is the previous one times this.
        max_interval_seconds: No wait is longer than this.
    """

    max_attempts: int = 3
    first_interval_seconds: float = 1.0
    backoff_coefficient: float = 2.0
    max_interval_seconds: float = 60.0

    def __post_init__(self) -> None:
        """Check the policy when it is made, so a bad one fails at startup."""
        if self.max_attempts < 1:
            raise ValueError(f"WorkflowRetryPolicy.max_attempts must be at least 1, got {self.max_attempts}.")
        if self.first_interval_seconds <= 0 or self.max_interval_seconds < self.first_interval_seconds:
            raise ValueError(
                "WorkflowRetryPolicy intervals must be positive and max_interval_seconds at least "
                f"first_interval_seconds, got {self.first_interval_seconds} and {self.max_interval_seconds}."
            )
        if self.backoff_coefficient < 1:
            raise ValueError(
                f"WorkflowRetryPolicy.backoff_coefficient must be at least 1, got {self.backoff_coefficient}."
            )

    def delay_seconds(self, failed_attempts: int) -> float:
        """The wait after `failed_attempts` failures."""
        delay = self.first_interval_seconds * self.backoff_coefficient ** (failed_attempts - 1)
        return min(delay, self.max_interval_seconds)


@dataclass(frozen=True)
class AgentNode:
    """An `AgentExecutor` of a hosted workflow: its conversation entity and how it takes context."""

    executor: AgentExecutor
    entity_name: str

    @property
    def context_mode(self) -> str:
        """The node's `context_mode` (`full` when it was not set)."""
        return agent_context_mode(self.executor)

    @property
    def context_filter(self) -> Callable[[list[Any]], list[Any]] | None:
        """The node's `context_filter`, for `custom`."""
        return agent_context_filter(self.executor)

    @property
    def ensure_trailing_user_turn(self) -> bool:
        """Whether the node appends core's synthetic user turn after a trailing assistant message."""
        return ensure_trailing_user_turn(self.executor)


@dataclass
class HostedWorkflow:
    """A workflow as this host runs it: its durable function names, agent nodes, sub-workflows and retry policy."""

    workflow: Workflow
    orchestrator_name: str
    activity_name: str
    agent_nodes: dict[str, AgentNode] = field(default_factory=dict)
    sub_workflows: dict[str, HostedWorkflow] = field(default_factory=dict)
    retry: WorkflowRetryPolicy | None = None
    # What each activity executor's `on_checkpoint_save` gave as built (JSON): a run's first activation restores
    # it, so a run never starts from state another run left in the shared executor object.
    initial_states: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The workflow's name (`Workflow.name`)."""
        return self.workflow.name


def orchestrator_name_for(workflow_name: str) -> str:
    """The orchestrator function of a workflow (the host lower-cases nothing here, but names compare case-blind)."""
    return f"workflow_{workflow_name}"


def plan_workflow(workflow: Workflow, retry: WorkflowRetryPolicy | None) -> HostedWorkflow:
    """Check `workflow` (and every sub-workflow) can run hosted and name its functions.

    Raises:
        ValueError: the workflow has no usable name, or uses a feature a replayed orchestration cannot run
            (the message names the workflow, the executor or edge, and what to change).
    """
    name = workflow.name
    if not isinstance(name, str) or not re.fullmatch(WORKFLOW_NAME_PATTERN, name) or _GENERATED_NAME.fullmatch(name):
        raise ValueError(
            f"Workflow name {name!r} cannot be used in routes and function names: build it with "
            "WorkflowBuilder(name='review', ...) using 1-64 letters, digits, '_' or '-', starting with a letter."
        )
    hosted = HostedWorkflow(
        workflow=workflow,
        orchestrator_name=orchestrator_name_for(name),
        activity_name=f"workflow_{name}_executor",
        retry=retry,
    )
    for executor_id, executor in workflow.executors.items():
        if isinstance(executor, AgentExecutor):
            hosted.agent_nodes[executor_id] = _agent_node(workflow, executor)
        elif isinstance(executor, WorkflowExecutor):
            _check_sub_workflow(workflow, executor)
            hosted.sub_workflows[executor_id] = plan_workflow(executor.workflow, retry)
        elif not isinstance(executor, Executor):
            raise ValueError(f"Workflow '{name}': executor {executor_id!r} is not a core Executor.")
        else:
            hosted.initial_states[executor_id] = _initial_state(workflow, executor)
    _check_edges(workflow)
    return hosted


def _initial_state(workflow: Workflow, executor: Executor) -> Any:
    saved = AGENT_LOOP.run(executor.on_checkpoint_save())
    try:
        return encode(saved)
    except UncarriableValueError as exc:
        raise ValueError(
            f"Workflow '{workflow.name}': executor {executor.id!r} saves state that cannot travel as JSON ({exc})."
        ) from None


def _agent_node(workflow: Workflow, executor: AgentExecutor) -> AgentNode:
    if type(executor) is not AgentExecutor:
        raise ValueError(
            f"Workflow '{workflow.name}': agent node {executor.id!r} is a {type(executor).__name__}, a subclass of "
            "AgentExecutor. Hosted agent nodes run core's AgentExecutor behaviour on conversation entities, so a "
            "subclass's own handlers would not run: use AgentExecutor itself, or a plain Executor that calls no agent."
        )
    context_filter = agent_context_filter(executor)
    if context_filter is not None and (
        inspect.iscoroutinefunction(context_filter) or inspect.iscoroutinefunction(type(context_filter).__call__)
    ):
        raise ValueError(
            f"Workflow '{workflow.name}': the context_filter of agent node {executor.id!r} is async. It runs inside "
            "the orchestration's replay and must be synchronous, deterministic and free of side effects "
            "(docs/workflows.md, L3-8)."
        )
    safe = _UNSAFE.sub("_", f"{workflow.name}_{executor.id}".lower())
    return AgentNode(executor=executor, entity_name=f"workflow_agent_{safe}")


def _check_sub_workflow(parent: Workflow, executor: WorkflowExecutor) -> None:
    for other in parent.executors.values():
        if other is executor:
            continue
        message = _probe_message(SubWorkflowRequestMessage)
        if any(is_instance_of(message, handled) for handled in other.input_types) and not isinstance(
            other, (AgentExecutor, WorkflowExecutor)
        ):
            raise ValueError(
                f"Workflow '{parent.name}': executor {other.id!r} handles SubWorkflowRequestMessage from sub-workflow "
                f"{executor.id!r}. Hosted sub-workflows run as sub-orchestrations whose requests go to the caller "
                "(GET .../runs/{runId} lists them); a parent executor cannot intercept them. Remove that handler."
            )


def _probe_message(cls: type) -> Any:
    # Only the type matters to is_instance_of; no instance of the request message is needed.
    return object.__new__(cls)


def _check_edges(workflow: Workflow) -> None:
    for group in workflow.edge_groups:
        if not isinstance(group, _SUPPORTED_EDGE_GROUPS):
            raise ValueError(
                f"Workflow '{workflow.name}': edge group {type(group).__name__} is not one this host can replay. "
                "Use single, fan-out, fan-in, switch-case or multi-selection edges."
            )
        for edge in group.edges:
            _check_callable(workflow, edge_condition(edge), f"the condition of edge {edge.id}")
        _check_callable(workflow, getattr(group, "selection_func", None), f"the selection function of {group.id}")
        for case in getattr(group, "cases", ()):
            if isinstance(case, SwitchCaseEdgeGroupCase):
                _check_callable(workflow, case.condition, f"a switch-case condition of {group.id}")


def _check_callable(workflow: Workflow, function: Any, what: str) -> None:
    if function is not None and inspect.iscoroutinefunction(function):
        raise ValueError(
            f"Workflow '{workflow.name}': {what} is async. Routing runs inside the orchestration's replay, so "
            "conditions and selection functions must be synchronous, deterministic and free of I/O; do the I/O in "
            "an executor and route on its result."
        )


def check_function_names(names: list[str], workflow_name: str) -> None:
    """Refuse function names the Functions host cannot take.

    Raises:
        ValueError: naming the function and the workflow.
    """
    for name in names:
        if not _FUNCTION_NAME.fullmatch(name):
            raise ValueError(
                f"Workflow '{workflow_name}' needs a function named {name!r}, which is not a valid Functions name "
                "(at most 128 letters, digits, '_' or '-'): shorten the workflow name or executor ids."
            )
