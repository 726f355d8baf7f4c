"""The app the inspector's tests serve: the template's agent (offline model, a tool, a tool that needs approval) with
compaction that summarizes after a few turns, and two workflows, one of which waits for a person."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from agent_framework import (
    Agent,
    AgentExecutor,
    CompactionProvider,
    Executor,
    InMemoryHistoryProvider,
    SummarizationStrategy,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    tool,
)
from chat_clients import FailingChatClient
from workflows.hitl_apps import Gate, delete_file

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient
from agent_host._streaming.sqlite_store import SqliteStreamStore


@tool
def get_weather(city: Annotated[str, "The city to get the weather for."]) -> str:
    """Get today's weather for a city (canned)."""
    return f"The weather in {city} is sunny, 21 °C."


@tool(approval_mode="always_require")
def cancel_order(order_id: Annotated[str, "The order to cancel."]) -> str:
    """Cancel an order; runs only after the caller approves it."""
    return f"Order {order_id} is cancelled."


class Shout(Executor):
    """Yields its input in capitals: a workflow that finishes at once."""

    @handler
    async def shout(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(text.upper())


def inspector_app(
    streams: Path | None = None, *, inspector: bool | None = True, app_class: type[AgentFunctionApp] = AgentFunctionApp
) -> AgentFunctionApp:
    """The agents `assistant` and `broken` (its model always fails), and the workflows `review` (writer, then a person
    approves), `cleanup` (an agent whose tool needs approval) and `shout`.

    With `streams` (a file), turns stream through an SQLite stream store there and HTTP functions take the HTTP
    streams shape, as the template under `serve` does; without, the classic shape and no stream store. `app_class`
    builds the app (`front_doors.MemoryFunctionApp` for one without a host).
    """
    client = OfflineChatClient()
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SummarizationStrategy(client=client, target_count=4, threshold=2),
        history_source_id=history.source_id,
    )
    assistant = Agent(
        client,
        "You are a friendly assistant. Remember what the user tells you. Use tools when asked.",
        name="assistant",
        tools=[get_weather, cancel_order],
        context_providers=[history, compaction],
        default_options={"store": False},
    )
    writer = AgentExecutor(Agent(OfflineChatClient(), "Write a short draft.", name="writer"), id="writer")
    gate = Gate(id="gate")
    review = WorkflowBuilder(name="review", start_executor=writer, output_from=[gate]).add_edge(writer, gate).build()
    janitor = AgentExecutor(Agent(OfflineChatClient(), "Clean up.", name="janitor", tools=[delete_file]), id="janitor")
    cleanup = WorkflowBuilder(name="cleanup", start_executor=janitor, output_from=[janitor]).build()
    shouter = Shout(id="shouter")
    shout = WorkflowBuilder(name="shout", start_executor=shouter, output_from=[shouter]).build()
    broken = Agent(FailingChatClient(), "You never answer.", name="broken")
    return app_class(
        agents=[assistant, broken],
        workflows=[review, cleanup, shout],
        settings=HostSettings(),
        inspector=inspector,
        stream_store=SqliteStreamStore(streams) if streams is not None else None,
        http_streams=streams is not None,
    )
