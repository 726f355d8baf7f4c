"""Sample app: Agent Framework workflows hosted as durable orchestrations, each used exactly as it was built.

- `review_full`, `review_last_agent`, `review_custom`: a writer hands its draft to a reviewer; the reviewer sees the
  whole conversation, only the writer's reply, or what a filter keeps (`context_mode`).
- `brainstorm`: a writer fans out to an optimist and a skeptic, and a collector fans their answers back in.
- `publish`: a writer drafts, a person approves or rejects the draft (`ctx.request_info`), and an approved draft
  is published by an agent whose tool needs a second approval (`approval_mode="always_require"`).

Run it from this folder with `PYTHONPATH=../.. ../../.venv/bin/python -m agent_host serve --app function_app:app`,
then send `workflows.http`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
    tool,
)

from agent_host import AgentFunctionApp, WorkflowRetryPolicy, chat_client_from_settings

# Azure OpenAI, OpenAI or an OpenAI-compatible server when configured, otherwise the offline model.
client = chat_client_from_settings()


def agent(name: str, instructions: str, **kwargs: object) -> Agent:
    return Agent(client, name=name, instructions=instructions, **kwargs)  # type: ignore[arg-type]


def drafts_only(messages: list[Message]) -> list[Message]:
    """The reviewer's custom context: the request and the last draft, nothing in between (runs in replay: pure)."""
    requests = [message for message in messages if message.role == "user"]
    drafts = [message for message in messages if message.role == "assistant"]
    return [*requests[:1], *drafts[-1:]]


def writer_and_reviewer(name: str, **reviewer_context: object) -> Workflow:
    writer = AgentExecutor(agent("writer", "Write a two-line draft of what is asked."), id="writer")
    reviewer = AgentExecutor(
        agent("reviewer", "Review the draft in one sentence."),
        id="reviewer",
        **reviewer_context,  # type: ignore[arg-type]
    )
    return WorkflowBuilder(name=name, start_executor=writer, output_from=[reviewer]).add_edge(writer, reviewer).build()


class Collect(Executor):
    """Fan-in: one line per branch."""

    @handler
    async def collect(self, replies: list[AgentExecutorResponse], ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("\n".join(f"{reply.executor_id}: {reply.agent_response.text}" for reply in replies))


def brainstorm() -> Workflow:
    writer = AgentExecutor(agent("writer", "Pitch the idea in one line."), id="writer")
    optimist = AgentExecutor(agent("optimist", "Say what is great about it."), id="optimist")
    skeptic = AgentExecutor(agent("skeptic", "Say what could go wrong."), id="skeptic", context_mode="last_agent")
    collect = Collect(id="collect")
    return (
        WorkflowBuilder(name="brainstorm", start_executor=writer, output_from=[collect])
        .add_fan_out_edges(writer, [optimist, skeptic])
        .add_fan_in_edges([optimist, skeptic], collect)
        .build()
    )


@dataclass
class ApprovalRequest:
    """What the person approving a draft is shown."""

    draft: str


class Approval(Executor):
    """Asks a person to approve the draft; an approved draft goes to the publisher."""

    @handler
    async def ask(self, response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorRequest, str]) -> None:
        await ctx.request_info(ApprovalRequest(draft=response.agent_response.text), bool)

    @response_handler
    async def decide(
        self, request: ApprovalRequest, approved: bool, ctx: WorkflowContext[AgentExecutorRequest, str]
    ) -> None:
        if not approved:
            await ctx.yield_output(f"Rejected: {request.draft}")
            return
        await ctx.send_message(AgentExecutorRequest([Message("user", [f"use publish_post text='{request.draft}'"])]))


@tool(approval_mode="always_require")
def publish_post(text: str) -> str:
    """Publish a post (a person approves each call)."""
    return f"Published: {text}"


def publish() -> Workflow:
    writer = AgentExecutor(agent("writer", "Write a one-line announcement."), id="writer")
    approval = Approval(id="approval")
    publisher = AgentExecutor(agent("publisher", "Publish what you are given.", tools=[publish_post]), id="publisher")
    return (
        WorkflowBuilder(name="publish", start_executor=writer, output_from=[approval, publisher])
        .add_chain([writer, approval, publisher])
        .build()
    )


app = AgentFunctionApp(
    workflows=[
        writer_and_reviewer("review_full"),
        writer_and_reviewer("review_last_agent", context_mode="last_agent"),
        writer_and_reviewer("review_custom", context_mode="custom", context_filter=drafts_only),
        brainstorm(),
    ]
)
# A failed model call or executor is tried twice more, one and then two seconds later (durable timers).
app.add_workflow(publish(), retry=WorkflowRetryPolicy(max_attempts=3, first_interval_seconds=1.0))
