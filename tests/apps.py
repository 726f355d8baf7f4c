"""Apps as the tests build them: an agent on a given chat client, an app around agents, and entity drivers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_framework import Agent
from batches import EntityDriver

from agent_host import AgentFunctionApp, HostSettings


def build_app(*agents: Any, settings: HostSettings | None = None, **kwargs: Any) -> AgentFunctionApp:
    return AgentFunctionApp(agents=list(agents), settings=settings or HostSettings(), **kwargs)


def make_agent(client: Any, name: str = "assistant", **kwargs: Any) -> Agent:
    return Agent(client, "You are a helpful test agent.", name=name, **kwargs)


def entity_function(app: AgentFunctionApp, agent_name: str) -> Callable[[str], str]:
    """The entity function the worker would call for an agent's conversations."""
    wanted = f"conversation_{agent_name.lower()}"
    for function in app.get_functions():
        if function.get_function_name() == wanted:
            return function.get_user_function()
    raise LookupError(wanted)


def driver_for(app: AgentFunctionApp, agent_name: str, key: str = "c1", state: str | None = None) -> EntityDriver:
    return EntityDriver(entity_function(app, agent_name), f"conversation_{agent_name.lower()}", key, state)
