"""Hosting a workflow: names, and the graph features a replayed orchestration cannot run, refused at startup."""

from __future__ import annotations

import pytest
from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    Executor,
    SubWorkflowRequestMessage,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
)
from chat_clients import ScriptedChatClient

from agent_host import AgentFunctionApp, HostSettings, WorkflowRetryPolicy


def node(name: str, **kwargs: object) -> AgentExecutor:
    return AgentExecutor(Agent(ScriptedChatClient(), name=name), id=name, **kwargs)  # type: ignore[arg-type]


def chain(name: str, *executors: Executor) -> object:
    builder = WorkflowBuilder(name=name, start_executor=executors[0])
    return (builder.add_chain(list(executors)) if len(executors) > 1 else builder).build()


def host(*workflows: object) -> AgentFunctionApp:
    return AgentFunctionApp(workflows=list(workflows), settings=HostSettings())  # type: ignore[arg-type]


def test_each_agent_node_gets_its_own_conversation_entity_and_the_workflow_its_functions() -> None:
    app = host(chain("review", node("writer"), node("reviewer")))

    names = {function.get_function_name() for function in app.get_functions()}

    assert {"workflow_review", "workflow_review_executor"} <= names
    assert {"workflow_agent_review_writer", "workflow_agent_review_reviewer"} <= names
    assert {"api_workflow_runs", "api_workflow_run", "api_workflow_response"} <= names


def test_two_workflows_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="Workflow name 'Review' is registered twice"):
        host(chain("review", node("a")), chain("Review", node("b")))


def test_a_builder_generated_name_is_refused_with_how_to_name_it() -> None:
    workflow = WorkflowBuilder(start_executor=node("a")).build()

    with pytest.raises(ValueError, match=r"WorkflowBuilder\(name='review'"):
        host(workflow)


def test_an_async_edge_condition_is_refused_naming_the_workflow() -> None:
    async def later(_: object) -> bool:
        return True

    a, b = node("a"), node("b")
    workflow = WorkflowBuilder(name="routed", start_executor=a).add_edge(a, b, condition=later).build()

    with pytest.raises(ValueError, match=r"Workflow 'routed': the condition of edge .* is async"):
        host(workflow)


def test_an_async_context_filter_is_refused() -> None:
    async def keep(messages: list) -> list:  # type: ignore[type-arg]
        return messages

    workflow = chain("filtered", node("a"), node("b", context_mode="custom", context_filter=keep))

    with pytest.raises(ValueError, match="Workflow 'filtered': the context_filter of agent node 'b' is async"):
        host(workflow)


def test_an_agent_executor_subclass_is_refused() -> None:
    class Shouting(AgentExecutor):
        @handler
        async def loud(self, text: int, ctx: WorkflowContext[AgentExecutorResponse]) -> None:
            await ctx.send_message(text)

    workflow = chain("shout", Shouting(Agent(ScriptedChatClient(), name="s"), id="s"))

    with pytest.raises(ValueError, match="agent node 's' is a Shouting, a subclass of AgentExecutor"):
        host(workflow)


def test_a_parent_executor_intercepting_sub_workflow_requests_is_refused() -> None:
    class Interceptor(Executor):
        @handler
        async def intercept(self, request: SubWorkflowRequestMessage, ctx: WorkflowContext) -> None:
            return None

    inner = chain("inner", node("a"))
    nested = WorkflowExecutor(inner, id="nested")
    interceptor = Interceptor(id="interceptor")
    workflow = WorkflowBuilder(name="parent", start_executor=nested).add_edge(nested, interceptor).build()

    with pytest.raises(ValueError, match="'interceptor' handles SubWorkflowRequestMessage from sub-workflow 'nested'"):
        host(workflow)


def test_a_retry_policy_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1, got 0"):
        WorkflowRetryPolicy(max_attempts=0)
