"""Apps written as agent-framework-azurefunctions' agent samples (01-03, 08) are written, with one change: the import.

Each function builds one sample's app from what that sample and its README do: `01` one agent, `02` two agents with
tools added one by one, `03` a callback that pushes each update to a Redis stream and a route that reads it back,
`08` agents exposed over HTTP, as MCP tools, or both. The models are the offline model (facts, tool calls) or a
scripted one; nothing else differs from what a user of the published host writes.
"""

from __future__ import annotations

import json
import os
import time
from typing import Annotated, Any

import azure.functions as func
import redis
import redis.asyncio
from agent_framework import Agent, AgentResponse, AgentResponseUpdate, tool

from agent_host import (  # was: agent_framework_azurefunctions / agent_framework_durabletask
    AgentCallbackContext,
    AgentFunctionApp,
    AgentResponseCallbackProtocol,
    OfflineChatClient,
)

REDIS_URL_SETTING = "REDIS_CONNECTION_STRING"
STREAM_PREFIX = "agent-stream:"
END_OF_STREAM = "[DONE]"


# 01 single_agent ----------------------------------------------------------------------------------------------------


def single_agent_app() -> AgentFunctionApp:
    joker = Agent(OfflineChatClient(), "You are good at telling jokes.", name="Joker")
    return AgentFunctionApp(agents=[joker], enable_health_check=True, max_poll_retries=50)


# 02 multi_agent -----------------------------------------------------------------------------------------------------


@tool(approval_mode="never_require")
def get_weather(location: Annotated[str, "The city to look up."]) -> dict[str, Any]:
    """Current weather for a location (canned)."""
    return {"location": location, "temperature": 72, "conditions": "Sunny", "humidity": 45}


@tool(approval_mode="never_require")
def calculate_tip(
    bill_amount: Annotated[float, "The bill."], tip_percentage: Annotated[float, "The tip in percent."] = 15.0
) -> dict[str, float]:
    """The tip and the total for a bill."""
    tip = round(bill_amount * tip_percentage / 100, 2)
    return {"bill_amount": bill_amount, "tip_percentage": tip_percentage, "tip_amount": tip, "total": bill_amount + tip}


def multi_agent_app() -> AgentFunctionApp:
    client = OfflineChatClient()
    weather = Agent(client, "You report the weather.", name="WeatherAgent", tools=[get_weather])
    math = Agent(client, "You work out tips.", name="MathAgent", tools=[calculate_tip])
    app = AgentFunctionApp(enable_health_check=True)
    app.add_agent(weather)
    app.add_agent(math)
    return app


# 03 reliable_streaming ----------------------------------------------------------------------------------------------


@tool
def get_weather_forecast(city: Annotated[str, "The city."]) -> str:
    """The next days' forecast (canned)."""
    return f"{city}: sunny, then light rain"


@tool
def get_local_events(city: Annotated[str, "The city."]) -> str:
    """What is on in the city this week (canned)."""
    return f"{city}: a jazz festival on Saturday"


class RedisStreamCallback(AgentResponseCallbackProtocol):
    """Appends each piece of an answer to the Redis stream `agent-stream:{thread_id}`, then an end marker."""

    def __init__(self, ttl_minutes: int = 10) -> None:
        self._ttl_seconds = ttl_minutes * 60

    async def on_streaming_response_update(self, update: AgentResponseUpdate, context: AgentCallbackContext) -> None:
        if update.text:
            await self._append(context.thread_id, update.text)

    async def on_agent_response(self, response: AgentResponse, context: AgentCallbackContext) -> None:
        await self._append(context.thread_id, END_OF_STREAM)

    async def _append(self, thread_id: str | None, text: str) -> None:
        key = f"{STREAM_PREFIX}{thread_id}"
        async with redis.asyncio.Redis.from_url(os.environ[REDIS_URL_SETTING]) as client:
            sequence = await client.xlen(key)
            await client.xadd(key, {"text": text, "sequence": sequence, "timestamp": time.time()})
            await client.expire(key, self._ttl_seconds)


def streaming_app() -> AgentFunctionApp:
    planner = Agent(
        OfflineChatClient(word_delay_seconds=0),
        "You plan trips.",
        name="TravelPlanner",
        tools=[get_weather_forecast, get_local_events],
    )
    app = AgentFunctionApp(
        agents=[planner], enable_health_check=True, default_callback=RedisStreamCallback(), max_poll_retries=100
    )

    @app.function_name("stream")
    @app.route(route="agent/stream/{conversation_id}", methods=["GET"])
    def stream(req: func.HttpRequest) -> func.HttpResponse:
        """The conversation's stream from `?cursor=` (a Redis entry id): SSE, or the text with `Accept: text/plain`."""
        conversation_id = req.route_params["conversation_id"]
        after = f"({req.params['cursor']}" if "cursor" in req.params else "-"
        with redis.Redis.from_url(os.environ[REDIS_URL_SETTING], decode_responses=True) as client:
            entries = client.xrange(f"{STREAM_PREFIX}{conversation_id}", min=after)
        headers = {"x-conversation-id": conversation_id, "Cache-Control": "no-cache"}
        if "text/plain" in req.headers.get("accept", ""):
            text = "".join(fields["text"] for _, fields in entries if fields["text"] != END_OF_STREAM)
            return func.HttpResponse(text, mimetype="text/plain", headers=headers)
        events = [
            f"id: {entry_id}\nevent: done\ndata: {END_OF_STREAM}\n\n"
            if fields["text"] == END_OF_STREAM
            else f"id: {entry_id}\nevent: message\ndata: {json.dumps(fields['text'])}\n\n"
            for entry_id, fields in entries
        ]
        return func.HttpResponse("".join(events), mimetype="text/event-stream", headers=headers)

    return app


# 08 mcp_server ------------------------------------------------------------------------------------------------------


def mcp_app() -> AgentFunctionApp:
    client = OfflineChatClient()
    joker = Agent(client, "You are good at telling jokes.", name="Joker")
    stocks = Agent(client, "Check stock prices.", name="StockAdvisor")
    plants = Agent(client, "You recommend plants.", name="PlantAdvisor", description="Get plant recommendations.")
    app = AgentFunctionApp(enable_health_check=True)
    app.add_agent(joker)
    app.add_agent(stocks, enable_http_endpoint=False, enable_mcp_tool_trigger=True)
    app.add_agent(plants, enable_http_endpoint=True, enable_mcp_tool_trigger=True)
    return app
