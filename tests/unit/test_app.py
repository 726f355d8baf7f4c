"""Registration: names, routes and entities per agent, and the public API surface."""

from __future__ import annotations

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient

from agent_host import AgentFunctionApp, HostSettings


def test_missing_agent_name_is_a_startup_error() -> None:
    from agent_framework import Agent

    with pytest.raises(ValueError, match="needs a name"):
        AgentFunctionApp(agents=[Agent(ScriptedChatClient(), "x")], settings=HostSettings())


def test_duplicate_agent_name_is_a_startup_error() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        build_app(make_agent(ScriptedChatClient(), "support"), make_agent(ScriptedChatClient(), "Support"))


def test_agent_name_unfit_for_routes_is_a_startup_error() -> None:
    with pytest.raises(ValueError, match="cannot be used in routes"):
        build_app(make_agent(ScriptedChatClient(), "my agent"))


def test_each_agent_gets_one_entity_and_the_routes_are_shared() -> None:
    app = build_app(make_agent(ScriptedChatClient(), "alpha"), make_agent(ScriptedChatClient(), "beta"))

    names = sorted(f.get_function_name() for f in app.get_functions())

    assert names == [
        "api_agui",
        "api_conversation",
        "api_conversations",
        "api_health",
        "api_messages",
        "api_openai_model",
        "api_openai_models",
        "api_openai_response",
        "api_openai_responses",
        "api_retention",
        "api_run",
        "api_turn",
        "api_turn_cancel",
        "api_turn_stream",
        "api_turns",
        "api_workflow_published_respond",
        "api_workflow_published_run",
        "api_workflow_published_status",
        "api_workflow_response",
        "api_workflow_run",
        "api_workflow_runs",
        "conversation_alpha",
        "conversation_beta",
        "expiry_conversation",
        "expiry_watch",
    ]


def test_add_agent_after_construction_registers_its_entity() -> None:
    app = build_app()
    app.add_agent(make_agent(ScriptedChatClient(), "late"), retention_mode="keep_all", max_state_bytes=4096)

    assert "conversation_late" in [f.get_function_name() for f in app.get_functions()]
    assert app._entities["late"].retention.mode == "keep_all"
    assert app._entities["late"].retention.max_state_bytes == 4096


def test_add_agent_refuses_a_budget_over_the_ceiling_naming_it() -> None:
    app = build_app()

    with pytest.raises(ValueError, match=r"max_state_bytes: must be at most 983040 \(960 KiB\)"):
        app.add_agent(make_agent(ScriptedChatClient(), "late"), max_state_bytes=983_041)
