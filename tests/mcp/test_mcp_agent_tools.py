"""The local host's MCP endpoint as the official MCP SDK client meets it over Streamable HTTP: version negotiation and
ping. The agents' tool calls run on the in-memory app (tests/front_ends/test_mcp_agent_tool_calls.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps import make_agent
from hosting import RunningHost
from mcp import ClientSession
from mcp_harness import serve, with_session

from agent_host import OfflineChatClient

__all__ = ["serve"]  # the fixture, imported for pytest

Serve = Callable[..., RunningHost]


def test_initialize_negotiates_the_extensions_newest_version_and_ping_answers(serve: Serve) -> None:
    running = serve(make_agent(OfflineChatClient()), enable_mcp_tool_trigger=True)

    async def session_facts(session: ClientSession) -> tuple[Any, ...]:
        pong = await session.send_ping()
        return session.protocol_version, session.server_info, session.server_capabilities, pong

    version, info, capabilities, pong = with_session(running, session_facts)

    # The SDK offers 2025-11-25; the extension's server (C# SDK 0.4) answers an unknown version with its newest.
    assert version == "2025-06-18"
    assert (info.name, info.version) == ("Azure Functions MCP server", "1.0.0")
    assert capabilities.tools is not None and capabilities.resources is None
    assert pong.model_dump(exclude_none=True) == {}
