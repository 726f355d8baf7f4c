"""Workflows for the MCP workflow-tool tests: text in, a structured input, a person's approval, a tool approval, a
failing executor; each executor counts its runs so a test can tell whether a retried call started a second run."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from agent_framework import (
    Agent,
    AgentExecutor,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
    tool,
)
from apps import make_agent
from parity_fakes import CallLog, RecordingChatClient

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient

# Runs of each executor in this process (the local host runs activities in the test's process).
EXECUTIONS: Counter[str] = Counter()


class Shout(Executor):
    """Yields its text in capitals."""

    @handler
    async def shout(self, text: str, ctx: WorkflowContext[None, str]) -> None:
        EXECUTIONS["shout"] += 1
        await ctx.yield_output(text.upper())


@dataclass
class Order:
    """A structured input: what to order and how many."""

    item: str
    quantity: int


class PlaceOrder(Executor):
    """Yields the order as a line and as a record."""

    @handler
    async def place(self, order: Order, ctx: WorkflowContext[None, Any]) -> None:
        EXECUTIONS["order"] += 1
        await ctx.yield_output(f"{order.quantity} x {order.item}")
        await ctx.yield_output({"item": order.item, "quantity": order.quantity})


@dataclass
class PublishRequest:
    """What the person approving a post is shown."""

    draft: str


class Approve(Executor):
    """Asks a person whether to publish the draft; yields what was decided."""

    @handler
    async def ask(self, draft: str, ctx: WorkflowContext[None, str]) -> None:
        EXECUTIONS["approve"] += 1
        await ctx.request_info(PublishRequest(draft=draft), bool)

    @response_handler
    async def decide(self, request: PublishRequest, approved: bool, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(f"published: {request.draft}" if approved else f"rejected: {request.draft}")


class Comment(Executor):
    """Asks a person for a comment (text) on the draft; yields it."""

    @handler
    async def ask(self, draft: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.request_info(PublishRequest(draft=draft), str)

    @response_handler
    async def note(self, request: PublishRequest, comment: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(f"{request.draft} -- {comment!r}")


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call)."""
    return f"deleted {path}"


class Broken(Executor):
    """Always fails."""

    @handler
    async def fail(self, text: str, ctx: WorkflowContext[None, str]) -> None:
        EXECUTIONS["broken"] += 1
        raise RuntimeError("the inventory service is down")


class Slow(Executor):
    """Waits until the test releases it (at most 30 s), then yields its text."""

    release = threading.Event()

    @handler
    async def wait(self, text: str, ctx: WorkflowContext[None, str]) -> None:
        EXECUTIONS["slow"] += 1
        Slow.release.wait(30)
        await ctx.yield_output(f"finally: {text}")


def workflows(log: CallLog) -> list[Workflow]:
    """Every test workflow: shout, order, approve, comment, cleanup (a tool approval in an agent node), broken, slow."""
    janitor = AgentExecutor(Agent(RecordingChatClient(log), name="janitor", tools=[delete_file]), id="janitor")
    return [
        WorkflowBuilder(name="shout", start_executor=Shout(id="shout"), description="Shouts the text back.").build(),
        WorkflowBuilder(name="order", start_executor=PlaceOrder(id="place")).build(),
        WorkflowBuilder(name="approve", start_executor=Approve(id="approve")).build(),
        WorkflowBuilder(name="comment", start_executor=Comment(id="comment")).build(),
        WorkflowBuilder(name="cleanup", start_executor=janitor).build(),
        WorkflowBuilder(name="broken", start_executor=Broken(id="broken")).build(),
        WorkflowBuilder(name="slow", start_executor=Slow(id="slow")).build(),
    ]


def workflow_tool_app(settings: HostSettings | None = None) -> AgentFunctionApp:
    """An agent and every test workflow, all of them MCP tools."""
    return AgentFunctionApp(
        agents=[make_agent(OfflineChatClient())],
        workflows=workflows(CallLog()),
        settings=settings or HostSettings(),
        enable_mcp_tool_trigger=True,
    )
