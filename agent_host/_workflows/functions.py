"""Registering a hosted workflow's durable functions on the app: orchestrators, the executor activity, node entities.

Each workflow (sub-workflows too, once each) gets its orchestrator function and one activity function for its
non-agent executors; each agent node gets a conversation entity function of its own, so its conversations,
sessions, compaction and retention work as for HTTP conversations, and its core session id (`{entity}.{runId}`)
keeps nodes apart in external history stores (L3-7, architecture.md failure 11). Knows the app's registration API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import azure.durable_functions as df
from agent_framework import SupportsAgentRun, Workflow

from .activity import run_executor_activity
from .contract import WorkflowRoute
from .registration import HostedWorkflow, WorkflowRetryPolicy, check_function_names, plan_workflow
from .runner import workflow_orchestrator

EntityFactory = Callable[[str, SupportsAgentRun], Callable[[df.DurableEntityContext], None]]


class WorkflowFunctions:
    """The workflows an app hosts and the functions registered for them.

    Args:
        app: The app to register functions on.
        entity_for: Builds the conversation entity body of an agent node (entity name, agent).
        activity_timeout_seconds: How long one executor activity may run.
        conversation_ttl_seconds: How long the agent nodes' conversations may stay idle (0: never expire).
    """

    def __init__(
        self,
        app: df.DFApp,
        entity_for: EntityFactory,
        activity_timeout_seconds: float,
        *,
        conversation_ttl_seconds: float = 0.0,
    ) -> None:
        self._app = app
        self._entity_for = entity_for
        self._timeout = activity_timeout_seconds
        self._conversation_ttl = conversation_ttl_seconds
        self.routes: dict[str, WorkflowRoute] = {}
        self._registered: dict[str, Workflow] = {}
        self._function_names: dict[str, str] = {}

    def add(self, workflow: Workflow, retry: WorkflowRetryPolicy | None = None) -> HostedWorkflow:
        """Host `workflow` (and its sub-workflows); it is reachable under `/api/workflows/{name}/...`.

        Raises:
            ValueError: a workflow of that name is already hosted, or the workflow cannot run hosted.
        """
        hosted = plan_workflow(workflow, retry)
        clash = next((name for name in self.routes if name.casefold() == workflow.name.casefold()), None)
        if clash is not None:
            raise ValueError(
                f"Workflow name {workflow.name!r} is registered twice (as {clash!r}); give each workflow a unique name."
            )
        plans = with_sub_workflows(hosted)
        names: dict[str, str] = {}
        for plan in plans:
            known = self._registered.get(plan.orchestrator_name.casefold())
            if known is not None and known is not plan.workflow:
                raise ValueError(
                    f"Workflow {plan.name!r} names two different workflows in this app (sub-workflows included); "
                    "give each a unique name."
                )
            for function_name in _function_names_of(plan):
                names.setdefault(function_name.casefold(), plan.name)
        check_function_names(list(names), workflow.name)
        for plan in plans:
            if plan.orchestrator_name.casefold() not in self._registered:
                self._register(plan)
        self.routes[workflow.name] = WorkflowRoute(workflow.name, hosted.orchestrator_name, workflow)
        return hosted

    def _register(self, plan: HostedWorkflow) -> None:
        for function_name in _function_names_of(plan):
            owner = self._function_names.get(function_name.casefold())
            if owner is not None:
                raise ValueError(
                    f"Workflow {plan.name!r} needs the function {function_name!r}, which workflow {owner!r} already "
                    "uses; rename one of the workflows or executors."
                )
        for node in plan.agent_nodes.values():
            self._register_entity(node.entity_name, node.executor.agent)
        self._register_activity(plan)
        self._register_orchestrator(plan)
        for function_name in _function_names_of(plan):
            self._function_names[function_name.casefold()] = plan.name
        self._registered[plan.orchestrator_name.casefold()] = plan.workflow

    def _register_entity(self, entity_name: str, agent: SupportsAgentRun) -> None:
        body = self._entity_for(entity_name, agent)

        def node_entity(context: df.DurableEntityContext) -> None:
            body(context)

        node_entity.__name__ = entity_name
        self._app.function_name(entity_name)(
            self._app.entity_trigger(context_name="context", entity_name=entity_name)(node_entity)
        )

    def _register_activity(self, plan: HostedWorkflow) -> None:
        workflow = plan.workflow
        initial = plan.initial_states
        timeout = self._timeout

        # Plain `dict`, not `dict[str, Any]`: the Python worker refuses a binding or return annotation that is not a
        # type (FunctionLoadError "invalid non-type annotation"), and the app would not load at all.
        def executor_activity(payload: dict) -> dict:
            return run_executor_activity(workflow, payload, initial.get(payload["executorId"]), timeout)

        executor_activity.__name__ = plan.activity_name
        self._app.function_name(plan.activity_name)(self._app.activity_trigger(input_name="payload")(executor_activity))

    def _register_orchestrator(self, plan: HostedWorkflow) -> None:
        body = workflow_orchestrator(plan, self._conversation_ttl)

        def orchestrator(context: df.DurableOrchestrationContext) -> Any:
            return (yield from body(context))

        orchestrator.__name__ = plan.orchestrator_name
        self._app.function_name(plan.orchestrator_name)(
            self._app.orchestration_trigger(context_name="context")(orchestrator)
        )


def with_sub_workflows(hosted: HostedWorkflow) -> list[HostedWorkflow]:
    """A hosted workflow and every sub-workflow under it, parents first."""
    found = [hosted]
    for child in hosted.sub_workflows.values():
        found.extend(with_sub_workflows(child))
    return found


def _function_names_of(plan: HostedWorkflow) -> list[str]:
    return [plan.orchestrator_name, plan.activity_name, *(node.entity_name for node in plan.agent_nodes.values())]
