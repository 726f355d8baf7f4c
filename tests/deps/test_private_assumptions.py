"""Each assumption the seams in agent_host/_deps make about a dependency's private internals, pinned by name.

An upgrade of agent-framework-core, azure-functions-durable, azure-functions or azure-functions-runtime that breaks
one fails here, with the assumption named
in the test and in its message, before any behaviour test fails for a reason that is harder to read. The last tests
keep every private use inside the seams.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import json
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import azure.functions as func
import pytest
from agent_framework import (
    Agent,
    AgentExecutor,
    AgentResponse,
    AgentResponseUpdate,
    Edge,
    Executor,
    InProcRunnerContext,
    Message,
    SingleEdgeGroup,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowMessage,
    create_edge_runner,
    handler,
)

from agent_host import OfflineChatClient
from agent_host._deps import agent_framework_private as core
from agent_host._deps import agent_framework_workflows_private as workflows
from agent_host._deps import durable_private as durable
from agent_host._deps import functions_private as functions
from agent_host._deps import functions_runtime_private as functions_runtime

PACKAGE = Path(__file__).resolve().parents[2] / "agent_host"
SEAMS = PACKAGE / "_deps"
THIRD_PARTY = ("agent_framework", "azure.durable_functions", "azure.functions", "azure_functions_runtime")


def _positional(function: Any) -> list[str]:
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]


class _Echo(Executor):
    @handler
    async def echo(self, message: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(message)


# agent-framework-core: agents, compaction, sessions (agent_framework_private.py)


def test_reconcile_compaction_summaries() -> None:
    assert _positional(core.reconcile_compaction_summaries) == [
        "source_messages",
        "working_messages",
        "source_message_identities",
    ], "core's _compaction._reconcile_compaction_summaries(source, working, source_ids) changed its signature"
    source = [Message(role="user", contents=["one"], message_id="a")]

    merged = core.reconcile_compaction_summaries(source, list(source), {id(message) for message in source})

    assert merged is None and [m.message_id for m in source] == ["a"], (
        "_reconcile_compaction_summaries no longer edits the source list in place"
    )


def test_group_messages() -> None:
    messages = [Message(role="user", contents=["hi"]), Message(role="assistant", contents=["hello"])]

    spans = core.group_messages(messages)

    assert [(span["kind"], span["start_index"], span["end_index"]) for span in spans] == [
        ("user", 0, 0),
        ("assistant_text", 1, 1),
    ], "core's _compaction.group_messages(messages) no longer returns one span dict per message group"
    assert all({"group_id", "has_reasoning"} <= set(span) for span in spans), "group_messages' span keys changed"


def test_filter_new_messages() -> None:
    first = Message(role="user", contents=["one"], message_id="m1")
    second = Message(role="assistant", contents=["two"], message_id="m2")
    third = Message(role="user", contents=["three"], message_id="m3")

    added = core.filter_new_messages([first, second], [first, second, third])

    assert added == [third], "core's _sessions.filter_new_messages(existing, incoming) no longer drops the overlap"


def test_response_finalizer() -> None:
    agent = Agent(OfflineChatClient(word_delay_seconds=0), "Be brief.", name="a")
    seen: list[int] = []
    finalize = core.response_finalizer(agent)

    def counting(updates: Any, *, response_format: Any | None = None) -> AgentResponse[Any]:
        seen.append(len(updates))
        return finalize(updates, response_format=response_format)

    core.set_response_finalizer(agent, counting)

    async def streamed() -> AgentResponse[Any]:
        stream = agent.run("My name is Ada.", stream=True)
        updates: list[AgentResponseUpdate] = [update async for update in stream]
        assert updates
        return await stream.get_final_response()

    response = asyncio.run(streamed())

    assert seen and "Ada" in response.text, (
        "core no longer builds a streamed run's response through the instance's _finalize_response_updates"
    )


# agent-framework-core: workflows (agent_framework_workflows_private.py)


def test_normalize_messages_input() -> None:
    messages = workflows.normalize_messages_input("hello")

    assert [(m.role, m.text) for m in messages] == [("user", "hello")], (
        "core's _workflows._message_utils.normalize_messages_input no longer turns text into a user message"
    )


def test_is_instance_of() -> None:
    assert workflows.is_instance_of(1, int | str) and not workflows.is_instance_of(1.5, int | str), (
        "core's _workflows._typing_utils.is_instance_of(value, type) changed"
    )
    assert workflows.is_instance_of([1, 2], list[int]), "is_instance_of no longer checks a generic's arguments"


def test_try_coerce_to_type() -> None:
    assert workflows.try_coerce_to_type(3, int) == 3, "core's _workflows._typing_utils.try_coerce_to_type changed"
    assert _positional(workflows.try_coerce_to_type) == ["data", "target_type"], "try_coerce_to_type's signature"


def test_pending_changes() -> None:
    state = workflows.State()
    state.import_state({"kept": 1, "dropped": 2})
    state.set("written", {"x": 1})
    state.delete("dropped")

    changes = workflows.pending_changes(state)
    state.commit()

    assert changes == ({"written": {"x": 1}}, ["dropped"]), (
        "core's _workflows._state.State no longer stages writes in _pending with _DeleteSentinel for a delete"
    )
    assert workflows.pending_changes(state) == ({}, []), "State.commit() no longer empties _pending"


def test_State() -> None:
    state = workflows.State()
    state.import_state({"k": "v"})

    assert state.get("k") == "v" and state.export_state() == {"k": "v"}, "core's _workflows._state.State changed"


def test_MessageType() -> None:
    message = WorkflowMessage(data="yes", source_id="s", target_id="t", type=workflows.MessageType.RESPONSE)

    assert message.type is workflows.MessageType.RESPONSE, "core's _runner_context.MessageType.RESPONSE is gone"


def test_InternalEdgeGroup() -> None:
    group = workflows.InternalEdgeGroup("executor")
    runner = create_edge_runner(group, {"executor": _Echo(id="executor")})

    assert group.source_executor_ids and isinstance(runner, workflows.EdgeRunner), (
        "core's _workflows._edge.InternalEdgeGroup(executor_id) is no longer an edge group core runs"
    )


def test_EdgeRunner() -> None:
    runner = create_edge_runner(SingleEdgeGroup("a", "b"), {"a": _Echo(id="a"), "b": _Echo(id="b")})

    assert isinstance(runner, workflows.EdgeRunner), "create_edge_runner no longer returns a _edge_runner.EdgeRunner"
    assert _positional(runner.send_message)[:3] == ["message", "state", "ctx"], "EdgeRunner.send_message changed"


def test_gather_cancelling_siblings_on_error() -> None:
    cancelled: list[bool] = []

    async def fails() -> None:
        raise RuntimeError("boom")

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def run() -> None:
        await workflows.gather_cancelling_siblings_on_error(waits(), fails())

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(run())
    assert cancelled == [True], "gather_cancelling_siblings_on_error no longer cancels the siblings of a failure"


def test_output_classifier() -> None:
    echo = _Echo(id="echo")
    workflow = WorkflowBuilder(start_executor=echo).build()

    assert workflows.output_classifier(workflow)("echo") == "output", (
        "Workflow._output_designation.classify(executor_id) no longer says a yield is an output"
    )


def test_agent_context_mode() -> None:
    agent = Agent(OfflineChatClient(), "Be brief.", name="a")

    assert workflows.agent_context_mode(AgentExecutor(agent)) == "full", "AgentExecutor._context_mode changed"
    assert workflows.agent_context_mode(AgentExecutor(agent, context_mode="last_agent")) == "last_agent"


def test_agent_context_filter() -> None:
    agent = Agent(OfflineChatClient(), "Be brief.", name="a")

    def keep_last(messages: list[Any]) -> list[Any]:
        return messages[-1:]

    executor = AgentExecutor(agent, context_mode="custom", context_filter=keep_last)

    assert workflows.agent_context_filter(executor) is keep_last, "AgentExecutor._context_filter changed"
    assert workflows.agent_context_filter(AgentExecutor(agent)) is None


def test_ensure_trailing_user_turn() -> None:
    agent = Agent(OfflineChatClient(), "Be brief.", name="a")

    assert workflows.ensure_trailing_user_turn(AgentExecutor(agent, ensure_trailing_user_turn=True)), (
        "AgentExecutor._ensure_trailing_user_turn changed"
    )
    assert not workflows.ensure_trailing_user_turn(AgentExecutor(agent))


def test_edge_condition() -> None:
    def only_yes(message: Any) -> bool:
        return message == "yes"

    assert workflows.edge_condition(Edge("a", "b", condition=only_yes)) is only_yes, "Edge._condition changed"
    assert workflows.edge_condition(Edge("a", "b")) is None


def test_runner_context_of() -> None:
    runner_context = InProcRunnerContext()
    ctx: WorkflowContext[Any, Any] = WorkflowContext(_Echo(id="e"), ["s"], workflows.State(), runner_context)

    assert workflows.runner_context_of(ctx) is runner_context, "WorkflowContext._runner_context changed"
    assert workflows.runner_context_of(object()) is None


# azure-functions-durable (durable_private.py)


def _entity_batch(state: str | None) -> str:
    operation = {"name": "op", "signal": True, "input": None}
    return json.dumps(
        {"self": {"name": "e", "key": "k"}, "state": state, "exists": state is not None, "batch": [operation]}
    )


def test_holds_raw_state() -> None:
    context, _ = df.DurableEntityContext.from_json(_entity_batch('{"a": 1}'))
    held = durable.holds_raw_state(context)
    context.set_state({"b": 2})

    assert held and not durable.holds_raw_state(context), (
        "DurableEntityContext._state_is_raw is no longer set by from_json for sent state and cleared by set_state"
    )


def test_raw_entity_state() -> None:
    context, _ = df.DurableEntityContext.from_json(_entity_batch('{"a": 1}'))

    assert durable.raw_entity_state(context) == '{"a": 1}', "DurableEntityContext._state is not the host's string"


def test_mark_entity_state_raw() -> None:
    def entity(context: df.DurableEntityContext) -> None:
        context.set_state('{"b": 2}')
        durable.mark_entity_state_raw(context)

    output = json.loads(df.Entity.create(entity)(_entity_batch('{"a": 1}')))

    assert output["entityState"] == '{"b": 2}', "a raw-marked state string is no longer handed to the host as it is"


def test_rpc_base_url() -> None:
    client = df.DurableOrchestrationClient(json.dumps(_client_binding()))

    assert durable.rpc_base_url(client) == "http://127.0.0.1:17071/durabletask/", (
        "DurableOrchestrationClient._orchestration_bindings.rpc_base_url changed"
    )


def test_task_hub_name() -> None:
    client = df.DurableOrchestrationClient(json.dumps(_client_binding()))

    assert durable.task_hub_name(client) == "hub", "DurableOrchestrationClient._orchestration_bindings.task_hub_name"


def test_close_shared_session() -> None:
    from azure.durable_functions.models.utils import http_utils

    async def open_then_close() -> bool:
        session = await http_utils._get_session()
        await durable.close_shared_session()
        return session.closed

    assert asyncio.run(open_then_close()), "models.utils.http_utils._close_session no longer closes the shared session"


def _client_binding() -> dict[str, Any]:
    return {
        "taskHubName": "hub",
        "creationUrls": {},
        "managementUrls": {},
        "rpcBaseUrl": "http://127.0.0.1:17071/durabletask/",
        "requiredQueryStringParameters": "",
    }


# azure-functions (functions_private.py)


def test_TraceContext() -> None:
    assert inspect.isabstract(functions.TraceContext), "azure.functions._abc.TraceContext is no longer an abstract base"
    assert {"trace_parent", "trace_state", "attributes"} <= set(functions.TraceContext.__abstractmethods__), (
        "azure.functions._abc.TraceContext's abstract properties changed"
    )
    assert issubclass(functions.TraceContext, func._abc.TraceContext)


def test_RetryContext() -> None:
    assert inspect.isabstract(functions.RetryContext), "azure.functions._abc.RetryContext is no longer an abstract base"
    assert {"retry_count", "max_retry_count"} <= set(functions.RetryContext.__abstractmethods__), (
        "azure.functions._abc.RetryContext's abstract properties changed"
    )


# azure-functions-runtime, Python 3.13+ only (functions_runtime_private.py)

needs_worker_library = pytest.mark.skipif(
    importlib.util.find_spec("azure_functions_runtime") is None, reason="azure-functions-runtime is for Python 3.13+"
)


@needs_worker_library
def test_worker_function_registry() -> None:
    from azure_functions_runtime import loader
    from azure_functions_runtime.functions import Registry

    registry = functions_runtime.worker_function_registry()

    assert isinstance(registry, Registry), "azure_functions_runtime.handle_event._functions is no longer a Registry"
    assert _positional(loader.process_indexed_function)[:2] == ["protos", "functions_registry"], (
        "loader.process_indexed_function(protos, functions_registry, ...) no longer takes the registry second"
    )


@needs_worker_library
def test_set_http_streams() -> None:
    from azure_functions_runtime.http_v2 import HttpV2Registry

    saved = (HttpV2Registry._http_v2_enabled, HttpV2Registry._http_v2_enabled_checked, HttpV2Registry._ext_base)
    try:
        functions_runtime.set_http_streams(True)
        on = (HttpV2Registry.http_v2_enabled(), HttpV2Registry.ext_base() is not None)
        functions_runtime.set_http_streams(False)
        off = HttpV2Registry.http_v2_enabled()
    finally:
        HttpV2Registry._http_v2_enabled, HttpV2Registry._http_v2_enabled_checked, HttpV2Registry._ext_base = saved

    assert (on, off) == ((True, True), False), (
        "HttpV2Registry no longer answers http_v2_enabled() from _http_v2_enabled once _http_v2_enabled_checked"
    )


# Every private use stays in the seams.


def _sources_outside_the_seams() -> list[Path]:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if SEAMS not in path.parents]


def test_no_module_outside_the_seams_imports_a_private_module_of_core_or_the_durable_sdk() -> None:
    found = []
    for path in _sources_outside_the_seams():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                private = any(part.startswith("_") and not part.startswith("__") for part in parts)
                if private and name.startswith(THIRD_PARTY):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name}")

    assert found == [], "import these through agent_host/_deps instead"


def _private_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """Underscore attributes read of anything but `self` or `cls`, directly or through getattr/hasattr/setattr."""
    reads = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                reads.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) > 1:
            name = node.args[1]
            literal = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else ""
            if node.func.id in ("getattr", "hasattr", "setattr") and literal[:1] == "_" and literal[:2] != "__":
                reads.append((node.lineno, literal))
    return reads


def test_no_module_outside_the_seams_reads_the_private_attributes_the_seams_name() -> None:
    seams = [ast.parse(path.read_text(encoding="utf-8")) for path in SEAMS.glob("*.py")]
    # What the seams read, and the private modules they import (`func._abc` reaches one as an attribute).
    named = {attribute for tree in seams for _, attribute in _private_reads(tree)} | {
        part
        for tree in seams
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for part in node.module.split(".")
        if part.startswith("_") and not part.startswith("__")
    }
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {attribute}"
        for path in _sources_outside_the_seams()
        for line, attribute in _private_reads(ast.parse(path.read_text(encoding="utf-8")))
        if attribute in named
    ]

    assert named and found == [], "read these through agent_host/_deps instead"
