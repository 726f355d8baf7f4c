"""`AgentFunctionApp`, `add_agent` and `get_agent` take agent-framework-azurefunctions' arguments with its meanings.

The published signatures are pinned here as data (that package is not a dependency); each parameter's meaning here is
asserted beside it. Where a value has no meaning for this host, it is refused or reported, never silently dropped.
"""

from __future__ import annotations

import inspect
import json
import logging
from typing import Any

import pytest
from agent_framework import Agent, WorkflowBuilder
from apps import build_app, make_agent
from azure.durable_functions import DurableOrchestrationContext
from chat_clients import ScriptedChatClient

from agent_host import AgentFunctionApp, HostSettings

# agent-framework-azurefunctions 1.0.0b260922, its positional-or-keyword parameters in order.
PUBLISHED_APP_PARAMETERS = [
    "agents",
    "workflow",
    "workflows",
    "http_auth_level",
    "enable_health_check",
    "enable_http_endpoints",
    "max_poll_retries",
    "poll_interval_seconds",
    "enable_mcp_tool_trigger",
    "default_callback",
]
PUBLISHED_ADD_AGENT_PARAMETERS = ["agent", "callback", "enable_http_endpoint", "enable_mcp_tool_trigger"]
PUBLISHED_GET_AGENT_PARAMETERS = ["context", "agent_name", "workflow_name"]


def positional(function: Any) -> list[str]:
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and name != "self"
    ]


def function_names(app: AgentFunctionApp) -> list[str]:
    return sorted(function.get_function_name() for function in app.get_functions())


def test_the_published_parameters_come_first_in_the_published_order() -> None:
    assert positional(AgentFunctionApp.__init__) == PUBLISHED_APP_PARAMETERS
    assert positional(AgentFunctionApp.add_agent) == PUBLISHED_ADD_AGENT_PARAMETERS
    assert positional(AgentFunctionApp.get_agent) == PUBLISHED_GET_AGENT_PARAMETERS
    assert inspect.signature(AgentFunctionApp.add_agent).parameters["entity_id"].kind is inspect.Parameter.KEYWORD_ONLY


def test_agents_may_be_passed_positionally_or_not_at_all() -> None:
    app = AgentFunctionApp([make_agent(ScriptedChatClient(), "alpha")], settings=HostSettings())
    empty = AgentFunctionApp(None, settings=HostSettings())

    assert list(app.agents) == ["alpha"] and empty.agents == {}


def shout_workflow(name: str = "shout") -> Any:
    agent = Agent(ScriptedChatClient(), "Shout.", name="shouter")
    return WorkflowBuilder(name=name, start_executor=agent).build()


def test_workflow_is_one_workflow_and_combines_with_workflows() -> None:
    one, other = shout_workflow("one"), shout_workflow("other")

    app = AgentFunctionApp(workflow=one, workflows=[other], settings=HostSettings())

    assert app.workflows == {"one": one, "other": other}
    assert app.workflow is None
    assert AgentFunctionApp(workflow=one, settings=HostSettings()).workflow is one


def test_workflows_may_be_a_mapping_keyed_by_each_workflows_name() -> None:
    one = shout_workflow("one")

    assert AgentFunctionApp(workflows={"one": one}, settings=HostSettings()).workflows == {"one": one}
    with pytest.raises(ValueError, match=r"workflows mapping key 'uno' does not match Workflow\.name 'one'"):
        AgentFunctionApp(workflows={"uno": one}, settings=HostSettings())


def test_enable_health_check_false_registers_no_health_route() -> None:
    default = build_app(make_agent(ScriptedChatClient()))
    without = build_app(make_agent(ScriptedChatClient()), enable_health_check=False)
    with_health = function_names(default)

    assert "api_health" in with_health
    assert set(with_health) - set(function_names(without)) == {"api_health"}
    assert (default.enable_health_check, without.enable_health_check) == (True, False)


def test_the_poll_parameters_are_the_run_wait_budget() -> None:
    default = build_app()
    given = build_app(max_poll_retries="50", poll_interval_seconds=0.5)

    assert (default.max_poll_retries, default.poll_interval_seconds, default._poll_wait) == (30, 1.0, None)
    assert (given.max_poll_retries, given.poll_interval_seconds, given._poll_wait) == (50, 0.5, 25.0)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_poll_retries": "many"}, "max_poll_retries must be a number, got 'many'"),
        ({"max_poll_retries": 0}, "max_poll_retries must be a whole number of at least 1, got 0"),
        ({"max_poll_retries": 2.5}, "max_poll_retries must be a whole number of at least 1, got 2.5"),
        ({"poll_interval_seconds": 0}, "poll_interval_seconds must be a number above 0, got 0"),
        ({"poll_interval_seconds": None, "max_poll_retries": object()}, "max_poll_retries must be a number"),
    ],
)
def test_poll_parameters_that_are_not_positive_numbers_are_refused(arguments: dict[str, Any], message: str) -> None:
    # That host falls back to its defaults silently; a typo here would change how long callers wait.
    with pytest.raises(ValueError, match=message):
        build_app(**arguments)


def test_a_poll_budget_over_the_longest_wait_is_capped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    settings = HostSettings(max_wait_seconds=60.0)

    app = build_app(settings=settings, max_poll_retries=100)

    assert app._poll_wait == 60.0
    assert "max_poll_retries * poll_interval_seconds is 100 s, over AGENT_HOST_MAX_WAIT_SECONDS (60 s)" in caplog.text


def test_registering_the_same_agent_again_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    agent = make_agent(ScriptedChatClient(), "support")
    app = build_app(agent)

    with caplog.at_level(logging.WARNING, "agent_host.app"):
        app.add_agent(agent)

    assert list(app.agents) == ["support"]
    assert "Agent 'support' is already registered; the repeated add_agent call was ignored." in caplog.text
    with pytest.raises(ValueError, match="registered twice"):
        app.add_agent(make_agent(ScriptedChatClient(), "support"))


def test_entity_id_is_the_name_the_agent_is_registered_under() -> None:
    app = build_app()

    app.add_agent(make_agent(ScriptedChatClient(), "support"), entity_id="helpdesk")

    assert list(app.agents) == ["helpdesk"]
    assert "conversation_helpdesk" in function_names(app)


def test_the_app_default_decides_an_agents_http_routes_unless_add_agent_says() -> None:
    app = build_app(enable_http_endpoints=False)

    app.add_agent(make_agent(ScriptedChatClient(), "hidden"))
    app.add_agent(make_agent(ScriptedChatClient(), "shown"), enable_http_endpoint=True)

    assert {name: route.http_enabled for name, route in app._agent_routes.items()} == {"hidden": False, "shown": True}
    assert list(app._http_agent_routes) == ["shown"]
    assert "conversation_hidden" in function_names(app)  # still an entity orchestrations and MCP can reach


def orchestration_context() -> DurableOrchestrationContext:
    """A real orchestration context at the start of an orchestration."""
    stamp = "2026-03-01T12:00:00.000000Z"
    history = [
        {"EventType": 12, "EventId": -1, "IsPlayed": False, "Timestamp": stamp},
        {"EventType": 0, "EventId": -1, "IsPlayed": False, "Timestamp": stamp, "Name": "o", "Version": ""},
    ]
    body = {"history": history, "instanceId": "o-1", "isReplaying": False, "parentInstanceId": None}
    return DurableOrchestrationContext.from_json(json.dumps({**body, "upperSchemaVersion": 1}))


def test_get_agent_with_a_workflow_name_finds_that_workflows_agent_node() -> None:
    app = AgentFunctionApp(workflow=shout_workflow(), settings=HostSettings())

    node = app.get_agent(orchestration_context(), "shouter", "shout")
    task = node.run("hi")

    assert node.name == "shout-shouter"
    call = task.action_repr.to_json()["compoundActions"][0]  # beside the conversation's expiry watch
    assert call["instanceId"].startswith("@workflow_agent_shout_shouter@")
    with pytest.raises(ValueError, match="Agent 'shouter' is not registered with this app"):
        app.get_agent(orchestration_context(), "shouter")


def test_an_agent_named_like_a_workflow_node_is_refused_in_either_order() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        AgentFunctionApp(
            agents=[make_agent(ScriptedChatClient(), "shout-shouter")],
            workflow=shout_workflow(),
            settings=HostSettings(),
        )
    app = build_app(make_agent(ScriptedChatClient(), "shout-shouter"))
    with pytest.raises(ValueError, match="Workflow agent node 'shout-shouter' has the name of an agent"):
        app.add_workflow(shout_workflow())
