"""The template app: ordinary Agent Framework agents, hosted as durable conversations on Azure Functions.

Edit the agent below as you would any core agent; `AgentFunctionApp` makes its history durable.
Run it with `func start` (Core Tools + Azurite) or `python -m agent_host serve`, then try `demo.http` (or stream a turn
with `curl -N -H "Accept: text/event-stream" ...`, see docs/streaming.md).
"""

from __future__ import annotations

from typing import Annotated

from agent_framework import (
    Agent,
    CompactionProvider,
    InMemoryHistoryProvider,
    SummarizationStrategy,
    tool,
)

from agent_host import AgentFunctionApp, chat_client_from_settings


@tool
def get_weather(city: Annotated[str, "The city to get the weather for."]) -> str:
    """Get today's weather for a city (a canned sample; replace with a real service)."""
    forecasts = {"paris": "sunny, 21 °C", "london": "light rain, 14 °C", "seattle": "overcast, 12 °C"}
    return f"The weather in {city} is {forecasts.get(city.strip().lower(), 'mild and dry, 18 °C')}."


@tool(approval_mode="always_require")
def cancel_order(order_id: Annotated[str, "The order to cancel."]) -> str:
    """Cancel an order. Needs the caller's approval before it runs (a sample; replace with a real service)."""
    return f"Order {order_id} is cancelled."


# Azure OpenAI when AZURE_OPENAI_ENDPOINT is set, OpenAI or an OpenAI-compatible server (e.g. Ollama) when
# OPENAI_API_KEY / OPENAI_BASE_URL is set, otherwise the offline model.
client = chat_client_from_settings()

# History and compaction, configured the normal core way: the host swaps this in-memory provider for a durable
# one with the same source id, so the compaction provider below works on durable history unchanged. Once more
# than 14 messages are in play, the oldest are summarized (by the same model) and excluded from what it is sent;
# the small numbers make demo.http show it, so raise them for real conversations.
history = InMemoryHistoryProvider(skip_excluded=True)
compaction = CompactionProvider(
    after_strategy=SummarizationStrategy(client=client, target_count=8, threshold=6),
    history_source_id=history.source_id,
)

assistant = Agent(
    client,
    instructions="You are a friendly assistant. Remember what the user tells you. Use tools when asked.",
    name="assistant",
    tools=[get_weather, cancel_order],
    context_providers=[history, compaction],
    # Keep the conversation in the durable entity, not in the model service (Responses API stores by default).
    default_options={"store": False},
)

# HTTP streams on: a turn asked for with `Accept: text/event-stream` reaches the caller word by word, on Azure and
# under `func start` (azurefunctions-extensions-http-fastapi, PYTHON_ENABLE_INIT_INDEXING=1). Every HTTP function of
# this app then takes FastAPI's request type, so add your own routes in that shape too; http_streams=False keeps the
# classic shape, and event streams then arrive whole when the turn ends. See docs/streaming.md.
app = AgentFunctionApp(agents=[assistant], http_streams=True)
