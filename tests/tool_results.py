"""MCP tools as the tests read them on either host: an agent tool's input schema as a client lists it, a tool result's
text blocks, and the conversation a call took its turn in, as the HTTP API shows it."""

from __future__ import annotations

import mcp.types as types
from hosting import SendsRequests

CONVERSATIONS = "/api/agents/{agent}/conversations"
AGENT_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "The message to send to the agent."},
        "sessionId": {
            "type": "string",
            "description": "The conversation to continue: the sessionId an earlier call returned. Omit it to start a "
            "new conversation.",
        },
        "idempotencyKey": {
            "type": "string",
            "description": "Optional: a unique key for this call (a UUID works). Calling again with the same key "
            "returns the first call's answer instead of running the agent again; reuse it only to retry this call.",
        },
    },
    "required": ["query"],
}


def texts(result: types.CallToolResult) -> list[str]:
    """The text blocks of a tool result."""
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def transcript(running: SendsRequests, conversation_id: str, agent: str = "assistant") -> list[tuple[str, str]]:
    """The conversation as the HTTP API shows it: (role, text) per message."""
    reply = running.request("GET", f"{CONVERSATIONS.format(agent=agent)}/{conversation_id}/messages")
    assert reply.status == 200, reply.body
    return [(message["role"], message["text"]) for message in reply.json()["messages"]]
