"""Shared factories: scripted chat clients, apps built around them, and entity drivers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent, BaseChatClient, ChatResponse, Content, Message
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer
from batches import EntityDriver
from hosting import RunningHost

from agent_host import AgentFunctionApp, HostSettings

ROOT = Path(__file__).resolve().parents[1]
# The template's local.settings.json sets it, and HTTP-streams apps need it (the local host refuses them without it):
# the tests' apps run with the app settings the template gives.
os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")

Script = Callable[[list[Message], Mapping[str, Any]], Message]


class ScriptedChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A deterministic model that records exactly what it receives on every call.

    By default it replies "reply N: <last user text>"; a user message "call TOOL {json}" makes it call TOOL.
    """

    def __init__(self, script: Script | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = script
        self.calls: list[list[Message]] = []

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        received = list(messages)
        self.calls.append(received)
        script = self.script or (lambda messages, _: default_reply(messages, len(self.calls)))
        reply = script(received, options)
        return ChatResponse(
            messages=[reply], usage_details={"input_token_count": len(received), "output_token_count": 1}
        )


def default_reply(messages: list[Message], call_number: int) -> Message:
    last = messages[-1]
    if last.role == "tool":
        return Message("assistant", [f"tool said {last.contents[0].result}"])
    text = last.text or ""
    if text.startswith("call "):
        _, name, arguments = text.split(" ", 2)
        return Message("assistant", [Content.from_function_call(f"call-{call_number}", name, arguments=arguments)])
    return Message("assistant", [f"reply {call_number}: {text}"])


class FailingChatClient(ScriptedChatClient):
    """A model whose every call raises."""

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        self.calls.append(list(messages))
        raise RuntimeError("model endpoint unavailable: secret-detail-123")


def build_app(*agents: Any, settings: HostSettings | None = None, **kwargs: Any) -> AgentFunctionApp:
    return AgentFunctionApp(agents=list(agents), settings=settings or HostSettings(), **kwargs)


def entity_function(app: AgentFunctionApp, agent_name: str) -> Callable[[str], str]:
    """The entity function the worker would call for an agent's conversations."""
    wanted = f"conversation_{agent_name.lower()}"
    for function in app.get_functions():
        if function.get_function_name() == wanted:
            return function.get_user_function()
    raise LookupError(wanted)


def driver_for(app: AgentFunctionApp, agent_name: str, key: str = "c1", state: str | None = None) -> EntityDriver:
    return EntityDriver(entity_function(app, agent_name), f"conversation_{agent_name.lower()}", key, state)


@pytest.fixture
def scripted() -> ScriptedChatClient:
    return ScriptedChatClient()


@pytest.fixture
def scripted_host(tmp_path: Path) -> Iterator[tuple[RunningHost, ScriptedChatClient]]:
    """The local host serving one agent on a scripted client, and that client; stopped afterwards."""
    client = ScriptedChatClient()
    running = RunningHost(lambda: build_app(make_agent(client)), tmp_path)
    yield running, client
    running.stop()


def make_agent(client: Any, name: str = "assistant", **kwargs: Any) -> Agent:
    return Agent(client, "You are a helpful test agent.", name=name, **kwargs)
