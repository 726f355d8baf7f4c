"""The workflows of the parity matrix, each built fresh from a set of recording models.

Every agent's model is a `RecordingChatClient` (tests/parity): deterministic in what it is sent, and logging each
call's messages, so two runs whose agents received the same messages give the same replies and the same logs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    Case,
    Default,
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
)
from parity_fakes import CallLog, RecordingChatClient, get_weather


@dataclass
class Models:
    """One recording model (call log) per agent name; shared by every object built for one side of a comparison."""

    logs: dict[str, CallLog] = field(default_factory=dict)

    def agent(self, name: str, **kwargs: Any) -> Agent:
        """A new agent object whose model logs to this side's log for `name`."""
        log = self.logs.setdefault(name, CallLog())
        return Agent(RecordingChatClient(log), name=name, **kwargs)

    def calls(self) -> dict[str, list[list[dict[str, Any]]]]:
        """Every agent's model calls, as the messages each call received."""
        return {name: [call.messages for call in log.calls] for name, log in sorted(self.logs.items())}


class Collect(Executor):
    """Fan-in: yields the texts of every branch's reply, in branch order, and passes them on as one string."""

    @handler
    async def collect(self, replies: list[AgentExecutorResponse], ctx: WorkflowContext[str, str]) -> None:
        text = " || ".join(f"{reply.executor_id}: {reply.agent_response.text}" for reply in replies)
        await ctx.yield_output(text)
        await ctx.send_message(text)


class Relay(Executor):
    """Hands its input on unchanged (a non-agent executor between agents)."""

    @handler
    async def relay(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)


class Upper(Executor):
    """Rewrites an agent's reply in capitals with `with_text`, keeping the conversation chain."""

    @handler
    async def upper(self, response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorResponse]) -> None:
        await ctx.send_message(response.with_text(response.agent_response.text.upper()))


class Finish(Executor):
    """Yields the last agent's reply text as the (sub-)workflow's output."""

    @handler
    async def finish(self, response: AgentExecutorResponse, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(response.agent_response.text)


def user_and_last_assistant(messages: list[Message]) -> list[Message]:
    """A custom context filter: the user's messages and the last assistant message."""
    last = [message for message in messages if message.role == "assistant"][-1:]
    return [message for message in messages if message.role == "user"] + last


def sequential(models: Models) -> Workflow:
    """writer -> editor -> reviewer, each taking the whole conversation."""
    writer = AgentExecutor(models.agent("writer"), id="writer")
    editor = AgentExecutor(models.agent("editor"), id="editor")
    reviewer = AgentExecutor(models.agent("reviewer"), id="reviewer")
    return WorkflowBuilder(name="sequential", start_executor=writer).add_chain([writer, editor, reviewer]).build()


def context_mode(mode: str) -> Callable[[Models], Workflow]:
    """A builder of the writer-editor-reviewer chain whose reviewer uses `mode`."""

    def build(models: Models) -> Workflow:
        """writer -> editor -> reviewer, the reviewer with `mode`."""
        writer = AgentExecutor(models.agent("writer"), id="writer")
        editor = AgentExecutor(models.agent("editor"), id="editor")
        kwargs: dict[str, Any] = {"context_mode": mode}
        if mode == "custom":
            kwargs["context_filter"] = user_and_last_assistant
        reviewer = AgentExecutor(models.agent("reviewer"), id="reviewer", **kwargs)
        return WorkflowBuilder(name=f"mode_{mode}", start_executor=writer).add_chain([writer, editor, reviewer]).build()

    return build


def fan_out_fan_in(models: Models) -> Workflow:
    """writer fans out to optimist (full) and skeptic (last_agent); a collector fans in and a judge reads it."""
    writer = AgentExecutor(models.agent("writer"), id="writer")
    optimist = AgentExecutor(models.agent("optimist"), id="optimist")
    skeptic = AgentExecutor(models.agent("skeptic"), id="skeptic", context_mode="last_agent")
    collect = Collect(id="collect")
    judge = AgentExecutor(models.agent("judge"), id="judge")
    return (
        WorkflowBuilder(name="fan", start_executor=writer, output_from=[collect, judge])
        .add_fan_out_edges(writer, [optimist, skeptic])
        .add_fan_in_edges([optimist, skeptic], collect)
        .add_edge(collect, judge)
        .build()
    )


def switch_case(models: Models) -> Workflow:
    """triage routes to urgent or routine by what it answered."""
    triage = AgentExecutor(models.agent("triage"), id="triage")
    urgent = AgentExecutor(models.agent("urgent"), id="urgent")
    routine = AgentExecutor(models.agent("routine"), id="routine")

    def is_urgent(response: AgentExecutorResponse) -> bool:
        return "urgent" in response.agent_response.text

    return (
        WorkflowBuilder(name="switch", start_executor=triage)
        .add_switch_case_edge_group(triage, [Case(condition=is_urgent, target=urgent), Default(target=routine)])
        .build()
    )


def tools(models: Models) -> Workflow:
    """A forecaster calls a tool; an executor rewrites its reply with `with_text`; a planner reads it all."""
    forecaster = AgentExecutor(models.agent("forecaster", tools=[get_weather]), id="forecaster")
    upper = Upper(id="upper")
    planner = AgentExecutor(models.agent("planner"), id="planner")
    return WorkflowBuilder(name="tools", start_executor=forecaster).add_chain([forecaster, upper, planner]).build()


def sub_workflow(models: Models) -> Workflow:
    """relay -> a drafter/polisher sub-workflow -> summarizer."""
    drafter = AgentExecutor(models.agent("drafter"), id="drafter")
    polisher = AgentExecutor(models.agent("polisher"), id="polisher", context_mode="last_agent")
    finish = Finish(id="finish")
    inner = (
        WorkflowBuilder(name="polish", start_executor=drafter, output_from=[finish])
        .add_chain([drafter, polisher, finish])
        .build()
    )
    relay = Relay(id="relay")
    nested = WorkflowExecutor(inner, id="polish_step")
    summarizer = AgentExecutor(models.agent("summarizer"), id="summarizer")
    return (
        WorkflowBuilder(name="nested", start_executor=relay)
        .add_edge(relay, nested)
        .add_edge(nested, summarizer)
        .build()
    )


def acyclic_custom(models: Models) -> Workflow:
    """planner fans out to critic (custom filter) and helper (full); a collector fans in."""
    planner = AgentExecutor(models.agent("planner"), id="planner")
    critic = AgentExecutor(
        models.agent("critic"), id="critic", context_mode="custom", context_filter=user_and_last_assistant
    )
    helper = AgentExecutor(models.agent("helper"), id="helper")
    collect = Collect(id="collect")
    return (
        WorkflowBuilder(name="acyclic", start_executor=planner)
        .add_fan_out_edges(planner, [critic, helper])
        .add_fan_in_edges([critic, helper], collect)
        .build()
    )


MATRIX: dict[str, tuple[Callable[[Models], Workflow], Any]] = {
    "sequential chain": (sequential, "Draft a slogan for rain boots."),
    "fan-out and fan-in": (fan_out_fan_in, "Pitch a cafe on the moon."),
    "switch-case (urgent)": (switch_case, "urgent: the roof leaks"),
    "switch-case (routine)": (switch_case, "the paint is chipped"),
    "context_mode full": (context_mode("full"), "Name a cat."),
    "context_mode last_agent": (context_mode("last_agent"), "Name a dog."),
    "context_mode custom": (context_mode("custom"), "Name a fish."),
    "agent with tools": (tools, "call get_weather city=Paris"),
    "sub-workflow": (sub_workflow, "Write about tides."),
    "acyclic graph with a custom filter": (acyclic_custom, "Plan a picnic."),
}
