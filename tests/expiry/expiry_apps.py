"""An app for the idle-expiry tests: agents with their own TTLs, an orchestration and a workflow that take turns, all
on one test clock; and helpers to drive it on the local host."""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import Any

import azure.durable_functions as df
from agent_framework import Agent, AgentExecutor, WorkflowBuilder
from clocks import ManualClock
from local_host.driving import OrchestrationHost
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient
from agent_host._expiry.watcher import expiry_instance_id
from agent_host._local_host.orchestration_store import InstanceRow

TTL_SECONDS = 3600
BRIEF_TTL = datetime.timedelta(minutes=10)
CONVERSATIONS = "/api/agents/{agent}/conversations/{conversation}"


def expiry_app(clock: ManualClock, ttl_seconds: float = TTL_SECONDS) -> AgentFunctionApp:
    """`assistant` (the app's TTL, an hour by default), `brief` (ten minutes) and `keeper` (never), on the offline
    model; the orchestrator `ask` and the workflow `relay` take turns of `assistant` and of a node."""
    app = AgentFunctionApp(
        [Agent(OfflineChatClient(), name="assistant")],
        settings=HostSettings(conversation_ttl_seconds=ttl_seconds),
        clock=clock,
        enable_mcp_tool_trigger=True,
    )
    app.add_agent(Agent(OfflineChatClient(), name="brief"), conversation_ttl=BRIEF_TTL)
    app.add_agent(Agent(OfflineChatClient(), name="keeper"), conversation_ttl=0)
    node = AgentExecutor(Agent(OfflineChatClient(), name="noter"), id="noter")
    app.add_workflow(WorkflowBuilder(name="relay", start_executor=node).build())

    @app.orchestration_trigger(context_name="context")
    def ask(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        assistant = app.get_agent(context, "assistant")
        session = assistant.create_session()
        first = yield assistant.run("My name is Ada.", session=session)
        second = yield assistant.run("What is my name?", session=session)
        return {"conversation": session.conversation_id, "answers": [first.text, second.text]}

    return app


class ExpiryHost(OrchestrationHost):
    """The expiry app on the local host, with helpers that take a turn and read what expiry left."""

    def turn(self, conversation: str, message: str, agent: str = "assistant") -> dict[str, Any]:
        """Take a waited turn and let the host settle (so the expiry orchestration has gone to sleep)."""
        reply = self.request(
            "POST", f"{CONVERSATIONS.format(agent=agent, conversation=conversation)}/turns", {"message": message}
        )
        assert reply.status == 200, reply.body
        self.settle()
        return reply.json()

    def conversation(self, conversation: str, agent: str = "assistant") -> tuple[int, dict[str, Any]]:
        reply = self.request("GET", CONVERSATIONS.format(agent=agent, conversation=conversation))
        return reply.status, reply.json()

    def watcher(self, conversation: str, entity: str = "conversation_assistant") -> InstanceRow | None:
        """The conversation's expiry orchestration, or None when none was started."""
        return self.local.orchestrations.store.instance(expiry_instance_id(entity, conversation))

    def check_at(self, conversation: str, entity: str = "conversation_assistant") -> int:
        """When the running expiry orchestration looks next (its custom status)."""
        record = self.watcher(conversation, entity)
        assert record is not None and record.status == "Running", record
        return int(json.loads(record.custom_status or "{}")["checkAt"])

    def entity_state(self, entity: str, conversation: str) -> dict[str, Any] | None:
        """An entity's stored state, decoded (None when there is none)."""
        stored = self.local.store.read_state(entity, conversation)
        return None if stored is None else json.loads(stored)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """One MCP tool call through the official client, over Streamable HTTP, in a session of its own."""

        async def call() -> Any:
            async with (
                create_mcp_http_client() as http,
                streamable_http_client(f"{self.local.base_url}/runtime/webhooks/mcp", http_client=http) as streams,
                ClientSession(*streams[:2]) as session,
            ):
                await session.initialize()
                return await session.call_tool(name, arguments)

        return asyncio.run(call())
