"""On the Durable Task Scheduler an agent tool's `sessionId` must fit the scheduler's 100-character entity ids."""

from __future__ import annotations

from collections.abc import Callable

from apps import make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost
from mcp_harness import call_tool, serve
from tool_results import texts

from agent_host import HostSettings

__all__ = ["serve"]  # the fixture, imported for pytest

SCHEDULER = HostSettings(durable_task_scheduler=True)


def test_a_session_id_longer_than_the_scheduler_leaves_is_a_tool_error(serve: Callable[..., RunningHost]) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), settings=SCHEDULER, enable_mcp_tool_trigger=True)

    refused = call_tool(running, "assistant", {"query": "hi", "sessionId": "s" * 77})
    taken = call_tool(running, "assistant", {"query": "hi", "sessionId": "s" * 76})

    assert refused.is_error is True
    assert refused.structured_content["error"]["code"] == "invalid_conversation_id"
    assert "takes at most 76 on the Durable Task Scheduler" in texts(refused)[0]
    assert taken.is_error is False
    assert len(client.calls) == 1
