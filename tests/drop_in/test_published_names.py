"""Every public name of agent-framework-azurefunctions 1.0.0b260922 (and the worker package its API hands out) exists
in agent_host, or is listed here with the reason it does not.

The published names are pinned as data: that package is not a dependency. When its installed copy is at hand
(`PUBLISHED_VENV`, the scratch environment it was researched in), a second test reads the names from it again.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
from typing import Any

import pytest

import agent_host
from agent_host._orchestrations.agent import OrchestrationAgent
from bench.published import PUBLISHED_VERSION, ensure_published_venv

# agent_framework_azurefunctions.__all__
PUBLISHED_ALL = ["AgentFunctionApp", "WorkflowHitlContext", "__version__"]

# The public members of the published classes a user's code touches: class attributes and, for the app, what its
# constructor sets; `DurableAIAgent` is what `get_agent` returns (agent_host's `OrchestrationAgent`).
PUBLISHED_MEMBERS: dict[str, list[str]] = {
    "AgentFunctionApp": [
        "add_agent",
        "agents",
        "default_callback",
        "enable_health_check",
        "enable_http_endpoints",
        "enable_mcp_tool_trigger",
        "get_agent",
        "max_poll_retries",
        "poll_interval_seconds",
        "workflow",
        "workflows",
    ],
    "WorkflowHitlContext": [
        "base_url",
        "base_url_override",
        "build_respond_url",
        "build_status_url",
        "from_context",
        "instance_id",
        "pending_request_id",
        "request_path_prefix",
        "workflow_name",
    ],
    "AgentCallbackContext": ["agent_name", "correlation_id", "request_message", "session_id", "thread_id"],
    "DurableAIAgent": ["create_session", "get_session", "run"],
}

_WIRE_NAME = "a wire name, not an API: agent_host reads and writes the same literal (docs/migrating.md)"
_STATE = "the published entity's stored state; agent_host keeps its own versioned state (docs/migrating.md)"
_STANDALONE = "part of a standalone Durable Task worker not built yet in agent_host.worker (docs/standalone-worker.md)"
_WORKER = "agent_host.worker provides it under its own name (docs/standalone-worker.md, 'Migrating')"
_INTERNAL = "plumbing inside that host, not called by an app"

# agent_framework_durabletask.__all__: the names agent_host exports, and every other with its reason.
DURABLETASK_PROVIDED = ["AgentCallbackContext", "AgentResponseCallbackProtocol"]
DURABLETASK_NOT_PROVIDED: dict[str, str] = {
    "DEFAULT_MAX_POLL_RETRIES": "AgentFunctionApp(max_poll_retries=...) has the same default (30)",
    "DEFAULT_POLL_INTERVAL_SECONDS": "AgentFunctionApp(poll_interval_seconds=...) has the same default (1.0)",
    "DURABLE_NAME_PREFIX": "entity and orchestrator names differ here ('conversation_{agent}', 'workflow_{name}')",
    "LEGACY_THREAD_ID_FIELD": _WIRE_NAME,
    "MIMETYPE_APPLICATION_JSON": _WIRE_NAME,
    "MIMETYPE_TEXT_PLAIN": _WIRE_NAME,
    "REQUEST_RESPONSE_FORMAT_JSON": _INTERNAL,
    "REQUEST_RESPONSE_FORMAT_TEXT": _INTERNAL,
    "SESSION_ID_FIELD": _WIRE_NAME,
    "SESSION_ID_HEADER": _WIRE_NAME,
    "THREAD_ID_FIELD": "deprecated in that package (a DeprecationWarning on access); thread_id is still read",
    "THREAD_ID_HEADER": "deprecated in that package and never sent by it; agent_host does not send it either",
    "WAIT_FOR_RESPONSE_FIELD": _WIRE_NAME,
    "WAIT_FOR_RESPONSE_HEADER": _WIRE_NAME,
    "AgentEntity": "the conversation entity is agent_host's own (docs/architecture.md)",
    "AgentEntityStateProviderMixin": _INTERNAL,
    "AgentSessionId": "a session is a conversation id here: create_session(session_id=...) joins one",
    "ApiResponseFields": _WIRE_NAME,
    "CapturingRunnerContext": "executor activities get a runner context with the same host_metadata",
    "ContentTypes": _STATE,
    "DurableAIAgent": "get_agent returns agent_host's OrchestrationAgent: the same create_session, get_session, run",
    "DurableAIAgentClient": _WORKER + ": AgentClient, whose get_agent(name).run has the same shape",
    "DurableAIAgentOrchestrationContext": _WORKER + ": AgentWorker.get_agent(context, name)",
    "DurableAIAgentWorker": _WORKER + ": AgentWorker, with add_agent",
    "DurableAgentExecutor": _INTERNAL,
    "DurableAgentSession": "a session is a conversation id here: create_session(session_id=...) joins one",
    "DurableAgentState": _STATE,
    "DurableAgentStateContent": _STATE,
    "DurableAgentStateData": _STATE,
    "DurableAgentStateDataContent": _STATE,
    "DurableAgentStateEntry": _STATE,
    "DurableAgentStateEntryJsonType": _STATE,
    "DurableAgentStateErrorContent": _STATE,
    "DurableAgentStateFunctionCallContent": _STATE,
    "DurableAgentStateFunctionResultContent": _STATE,
    "DurableAgentStateHostedFileContent": _STATE,
    "DurableAgentStateHostedVectorStoreContent": _STATE,
    "DurableAgentStateMessage": _STATE,
    "DurableAgentStateRequest": _STATE,
    "DurableAgentStateResponse": _STATE,
    "DurableAgentStateTextContent": _STATE,
    "DurableAgentStateTextReasoningContent": _STATE,
    "DurableAgentStateUnknownContent": _STATE,
    "DurableAgentStateUriContent": _STATE,
    "DurableAgentStateUsage": _STATE,
    "DurableAgentStateUsageContent": _STATE,
    "DurableStateFields": _STATE,
    "DurableTaskWorkflowContext": _STANDALONE,
    "DurableWorkflowClient": _STANDALONE,
    "RunRequest": "the entity's run operation is agent_host's own contract (RunOperation)",
    "WorkflowOrchestrationContext": _STANDALONE,
    "WorkflowRegistrationPlan": _INTERNAL,
    "__version__": "agent_host.__version__ is agent_host's own version",
    "collect_hosted_workflows": _INTERNAL,
    "deserialize_workflow_output": _INTERNAL,
    "ensure_response_format": _INTERNAL,
    "execute_workflow_activity": _INTERNAL,
    "is_auto_generated_workflow_name": "AgentFunctionApp refuses a workflow without a name at startup instead",
    "load_agent_response": _INTERNAL,
    "plan_workflow_registration": _INTERNAL,
    "run_agent_coroutine": _STANDALONE,
    "run_workflow_orchestrator": _INTERNAL,
    "validate_executor_id": _INTERNAL,
    "validate_workflow_name": "AgentFunctionApp checks workflow names at startup",
    "workflow_name_from_orchestrator": _INTERNAL,
    "workflow_orchestrator_name": _INTERNAL,
}
DURABLETASK_ALL = sorted([*DURABLETASK_PROVIDED, *DURABLETASK_NOT_PROVIDED])

OURS: dict[str, Any] = {
    "AgentFunctionApp": agent_host.AgentFunctionApp,
    "WorkflowHitlContext": agent_host.WorkflowHitlContext,
    "AgentCallbackContext": agent_host.AgentCallbackContext,
    "DurableAIAgent": OrchestrationAgent,
}


def members(cls: type) -> set[str]:
    """The public names a class offers: its attributes and, for a dataclass, its fields."""
    names = {name for name in dir(cls) if not name.startswith("_")}
    if dataclasses.is_dataclass(cls):
        names |= {item.name for item in dataclasses.fields(cls)}
    return names


def test_every_published_name_is_in_agent_host() -> None:
    missing = [name for name in PUBLISHED_ALL if not hasattr(agent_host, name)]

    assert missing == []
    assert {"AgentFunctionApp", "WorkflowHitlContext"} <= set(agent_host.__all__)


@pytest.mark.parametrize("name", sorted(PUBLISHED_MEMBERS))
def test_every_member_of_the_published_classes_is_on_ours(name: str) -> None:
    app_attributes = (
        set(vars(agent_host.AgentFunctionApp(settings=agent_host.HostSettings())))
        if name == "AgentFunctionApp"
        else set()
    )

    missing = set(PUBLISHED_MEMBERS[name]) - members(OURS[name]) - app_attributes

    assert missing == set()


def test_every_name_of_the_worker_package_is_provided_or_has_its_reason() -> None:
    provided = [name for name in DURABLETASK_PROVIDED if name in agent_host.__all__]

    assert provided == DURABLETASK_PROVIDED
    assert set(DURABLETASK_PROVIDED).isdisjoint(DURABLETASK_NOT_PROVIDED)
    assert all(reason.strip() for reason in DURABLETASK_NOT_PROVIDED.values())


def test_the_worker_package_callback_protocol_is_ours_too() -> None:
    # Sample 03 subclasses the protocol and reads the context's fields; both must match by name and signature.
    for method in ("on_streaming_response_update", "on_agent_response"):
        assert list(inspect.signature(getattr(agent_host.AgentResponseCallbackProtocol, method)).parameters) == [
            "self",
            "update" if method == "on_streaming_response_update" else "response",
            "context",
        ]


_READ_PUBLISHED = """
import dataclasses, json
import agent_framework_azurefunctions as published, agent_framework_durabletask as worker
import azure.durable_functions as df
# What the app's constructor sets, without what the DFApp it extends sets.
set_by_app = {n for n in set(vars(published.AgentFunctionApp())) - set(vars(df.DFApp())) if not n.startswith("_")}
def public(cls):
    names = {n for n in vars(cls) if not n.startswith("_")}
    return names | ({f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set())
print(json.dumps({
    "all": sorted(published.__all__),
    "worker_all": sorted(worker.__all__),
    "members": {
        "AgentFunctionApp": sorted(public(published.AgentFunctionApp) | set_by_app),
        "WorkflowHitlContext": sorted(public(published.WorkflowHitlContext)),
        "AgentCallbackContext": sorted(public(worker.AgentCallbackContext)),
        "DurableAIAgent": sorted(public(worker.DurableAIAgent)),
    },
}))
"""


@pytest.mark.clean_venv
def test_the_pinned_names_are_those_of_the_installed_published_package() -> None:
    # The benchmarks' own environment of the published host (bench/.venvs), installed from PyPI on first use.
    python = ensure_published_venv(PUBLISHED_VERSION)

    done = subprocess.run([str(python), "-c", _READ_PUBLISHED], capture_output=True, text=True, timeout=120, check=True)

    found = json.loads(done.stdout)
    assert found["all"] == sorted(PUBLISHED_ALL)
    assert found["worker_all"] == DURABLETASK_ALL
    assert found["members"] == {name: sorted(names) for name, names in PUBLISHED_MEMBERS.items()}
