"""Contract: the metadata the worker sends for MCP tools is the `mcpToolTrigger` binding the extension reads.

The binding's fields (`toolName`, `description`, `toolProperties` as a JSON string of property objects,
`useResultSchema`) are the ones the Functions MCP extension's `McpToolTriggerAttribute` takes; agent tools keep
the published agent-framework-azurefunctions host's `query` and `sessionId`, so its clients work unchanged, and
workflow tools take an `input` typed after the start executor's input, plus `runId`, `requestId`, `response` and
`idempotencyKey`.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import azure.functions as func
import pytest
from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import child_pythonpath
from worker_metadata import ROOT, FunctionMetadata, IndexedApp, index

from agent_host._local_host.direct_invoker import DirectInvoker
from agent_host._local_host.mcp_tools import discover_mcp_tools

FUNCTION_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,127}$")


class Digest(Executor):
    """A workflow start that takes text."""

    @handler
    async def digest(self, text: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(text[:10])


@dataclass
class Shipment:
    """A structured workflow input."""

    sku: str
    count: int


class Ship(Executor):
    """A workflow start that takes a dataclass."""

    @handler
    async def ship(self, shipment: Shipment, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(f"{shipment.count} x {shipment.sku}")


def mcp_app() -> IndexedApp:
    app = build_app(
        make_agent(ScriptedChatClient(), "Support", description="Answers support questions."),
        make_agent(ScriptedChatClient(), "billing-v2"),
        workflows=[
            WorkflowBuilder(name="Digest", start_executor=Digest(id="digest"), description="Digests text.").build(),
            WorkflowBuilder(name="ship", start_executor=Ship(id="ship")).build(),
        ],
        enable_mcp_tool_trigger=True,
    )
    return IndexedApp(app, index(app))


def tool_functions(indexed: IndexedApp) -> dict[str, FunctionMetadata]:
    return {f.name: f for f in indexed.functions if f.trigger["type"] == "mcpToolTrigger"}


def tool_properties(function: FunctionMetadata, tool_name: str, description: str) -> list[dict[str, typing.Any]]:
    """Assert the layout every tool function shares (the trigger, a durable client, no $return); its properties.

    Agent tools and workflow tools are published the same way and differ only in name, description and properties.
    """
    trigger = dict(function.trigger)
    properties = json.loads(trigger.pop("toolProperties"))
    assert trigger == {
        "direction": "IN",
        "dataType": "UNDEFINED",
        "type": "mcpToolTrigger",
        "name": "context",
        "toolName": tool_name,
        "description": description,
        "useResultSchema": True,
    }
    assert all(set(p) == {"propertyName", "propertyType", "description", "isRequired", "isArray"} for p in properties)
    client = {"direction": "IN", "type": "durableClient", "name": "client"}
    assert function.bindings_of_type("durableClient") == [client]
    assert len(function.bindings) == 2  # no $return: the trigger takes the return value itself
    return properties


def test_each_agent_tool_is_one_function_with_a_durable_client_and_the_tool_trigger() -> None:
    indexed = mcp_app()

    functions = tool_functions(indexed)

    assert sorted(functions) == ["mcptool_billing-v2", "mcptool_digest", "mcptool_ship", "mcptool_support"]
    properties = tool_properties(functions["mcptool_support"], "Support", "Answers support questions.")
    assert [p["propertyName"] for p in properties] == ["query", "sessionId", "idempotencyKey"]


def test_the_tool_keeps_the_published_hosts_name_and_properties() -> None:
    functions = tool_functions(mcp_app())

    trigger = functions["mcptool_billing-v2"].trigger
    kinds = {p["propertyName"]: (p["propertyType"], p["isRequired"]) for p in json.loads(trigger["toolProperties"])}

    assert trigger["toolName"] == "billing-v2"
    assert trigger["description"] == "Interact with billing-v2 agent"
    assert kinds["query"] == ("string", True)
    assert kinds["sessionId"] == ("string", False)


def test_each_workflow_tool_is_one_function_with_a_durable_client_and_the_tool_trigger() -> None:
    functions = tool_functions(mcp_app())

    properties = tool_properties(functions["mcptool_digest"], "Digest", "Digests text.")
    assert [(p["propertyName"], p["propertyType"], p["isRequired"], p["isArray"]) for p in properties] == [
        ("input", "string", False, False),
        ("runId", "string", False, False),
        ("requestId", "string", False, False),
        ("response", "string", False, False),
        ("idempotencyKey", "string", False, False),
    ]


def test_a_workflow_tools_input_follows_its_start_executors_input_type() -> None:
    trigger = tool_functions(mcp_app())["mcptool_ship"].trigger

    shipment = json.loads(trigger["toolProperties"])[0]

    assert trigger["toolName"] == "ship"
    assert trigger["description"].startswith("Run the ship workflow: send input to start a run")
    assert (shipment["propertyName"], shipment["propertyType"], shipment["isRequired"]) == ("input", "object", False)
    assert '"properties":{"sku":{"type":"string"},"count":{"type":"integer"}}' in shipment["description"]


def test_tool_function_names_are_valid_and_unique_among_all_functions() -> None:
    names = [f.name for f in mcp_app().functions]

    assert [name for name in names if not FUNCTION_NAME.match(name)] == []
    assert len({name.lower() for name in names}) == len(names)


def test_the_worker_accepts_the_tool_functions_parameters_and_return() -> None:
    registry = func.get_binding_registry()
    converter = registry.get("mcpToolTrigger")
    for function in tool_functions(mcp_app()).values():
        hints = typing.get_type_hints(function.user_function)

        # The worker refuses a function whose parameters and bindings differ (FunctionLoadError at indexing).
        assert set(inspect.signature(function.user_function).parameters) == {"context", "client"}
        assert converter.check_input_type_annotation(hints["context"])
        assert converter.has_implicit_output()
        assert hints["return"] is str
        assert converter.encode('{"type": "call_tool_result"}', expected_type=str).type == "string"


def test_every_function_of_an_app_with_workflows_has_annotations_the_worker_accepts() -> None:
    # The worker refuses a parameter or return annotation that is not a type (`dict[str, Any]`, say) with
    # FunctionLoadError "invalid non-type annotation", and then loads none of the app's functions.
    refused = {
        (function.name, name): hint
        for function in mcp_app().functions
        for name, hint in typing.get_type_hints(function.user_function).items()
        if not isinstance(hint, type)
    }

    assert refused == {}


def test_the_local_host_serves_exactly_the_tools_the_host_is_sent() -> None:
    indexed = mcp_app()

    functions = [f.function for f in indexed.functions]
    invoker = DirectInvoker(functions, why="to list the tools")
    served = {tool.function_name: tool for tool in discover_mcp_tools(functions, invoker, lambda _: "{}")}

    sent = tool_functions(indexed)
    assert sorted(served) == sorted(sent)
    for name, tool in served.items():
        trigger = sent[name].trigger
        assert (tool.tool_name, tool.description, tool.use_result_schema) == (
            trigger["toolName"],
            trigger["description"],
            trigger["useResultSchema"],
        )
        assert tool.properties == json.loads(trigger["toolProperties"])
        assert (tool.context_param, tool.client_param) == ("context", "client")


def test_an_app_without_mcp_enabled_sends_no_tool_functions() -> None:
    app = build_app(make_agent(ScriptedChatClient(), "assistant"))

    assert [f.name for f in index(app) if f.trigger["type"] == "mcpToolTrigger"] == []


WORKER_APP = """
from agent_framework import Agent, AgentExecutor, WorkflowBuilder
from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient

writer = AgentExecutor(Agent(OfflineChatClient(), "x", name="writer"), id="writer")
app = AgentFunctionApp([Agent(OfflineChatClient(), "x", name="assistant")], settings=HostSettings(),
                       workflows=[WorkflowBuilder(name="review", start_executor=writer).build()],
                       enable_mcp_tool_trigger=True)
"""


def test_the_real_worker_indexes_agent_and_workflow_tools_and_binds_their_context_and_client(tmp_path: Path) -> None:
    pytest.importorskip("azure_functions_runtime", reason="the worker's indexing package needs Python 3.13+")
    (tmp_path / "function_app.py").write_text(WORKER_APP, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_"))}
    env["PYTHONPATH"] = child_pythonpath(ROOT)
    script = Path(__file__).with_name("worker_indexing.py")

    completed = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )

    assert completed.returncode == 0, completed.stderr
    indexed = json.loads(completed.stdout.strip().splitlines()[-1])
    report = {entry["name"]: entry for entry in indexed["functions"]}
    for name in ("mcptool_assistant", "mcptool_review"):
        tool = report[name]
        assert (tool["isHttp"], tool["inputs"]) == (False, {"context": "mcpToolTrigger", "client": "generic"})
        assert tool["rawBindings"][1]["useResultSchema"] is True
