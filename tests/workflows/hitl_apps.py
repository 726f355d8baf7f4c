"""Workflows that wait for people: an executor's `request_info` with a `response_handler`, a tool that needs approval
inside an agent node, and both inside a sub-workflow."""

from __future__ import annotations

from dataclasses import dataclass

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
    tool,
)
from parity_fakes import CallLog, RecordingChatClient

from agent_host import AgentFunctionApp, HostSettings


@dataclass
class ReviewRequest:
    """What the reviewer is asked: approve this draft?"""

    draft: str


class Gate(Executor):
    """Asks a person to approve the draft; publishes it when approved, otherwise says it was rejected."""

    @handler
    async def ask(self, response: AgentExecutorResponse, ctx: WorkflowContext[str, str]) -> None:
        await ctx.request_info(ReviewRequest(draft=response.agent_response.text), bool)

    @response_handler
    async def decide(self, request: ReviewRequest, approved: bool, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"published: {request.draft}" if approved else f"rejected: {request.draft}")


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file (needs a person's approval)."""
    return f"deleted {path}"


def approval_app(log: CallLog | None = None) -> AgentFunctionApp:
    """`review`: writer then gate (request_info); `cleanup`: a tool needing approval; `outer`: review nested."""
    log = log or CallLog()
    writer = AgentExecutor(Agent(RecordingChatClient(log), name="writer"), id="writer")
    gate = Gate(id="gate")
    review = WorkflowBuilder(name="review", start_executor=writer, output_from=[gate]).add_edge(writer, gate).build()

    janitor = AgentExecutor(Agent(RecordingChatClient(log), name="janitor", tools=[delete_file]), id="janitor")
    cleanup = WorkflowBuilder(name="cleanup", start_executor=janitor).build()

    inner_writer = AgentExecutor(Agent(RecordingChatClient(log), name="writer"), id="writer")
    inner_gate = Gate(id="gate")
    inner = (
        WorkflowBuilder(name="inner_review", start_executor=inner_writer, output_from=[inner_gate])
        .add_edge(inner_writer, inner_gate)
        .build()
    )
    nested = WorkflowExecutor(inner, id="review_step", allow_direct_output=True)
    outer = WorkflowBuilder(name="outer", start_executor=nested, output_from=[nested]).build()
    return AgentFunctionApp(workflows=[review, cleanup, outer], settings=HostSettings())
