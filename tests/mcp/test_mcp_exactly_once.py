"""Exactly-once MCP turns: a retried call (same idempotencyKey) never runs the agent twice, whether its turn is
answered, still running, or delivered twice by the host."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from agent_framework import Message
from apps import make_agent
from chat_clients import ScriptedChatClient, default_reply
from faults import deliver_twice
from hosting import RunningHost
from mcp import ClientSession
from mcp.types import CallToolResult
from mcp_harness import MCP_PATH, call_tool, post_raw, serve, sse_data, with_session
from tool_results import CONVERSATIONS, texts, transcript

from agent_host import HostSettings

__all__ = ["serve"]  # the fixture, imported for pytest

Serve = Callable[..., RunningHost]


def test_a_retry_with_the_same_key_returns_the_first_answer_without_running_the_agent(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    arguments = {"query": "hello", "sessionId": "c1", "idempotencyKey": "call-1"}

    first = call_tool(running, "assistant", arguments)
    retry = call_tool(running, "assistant", arguments)

    assert texts(retry) == texts(first)
    assert texts(first)[0] == "reply 1: hello"
    assert retry.structured_content["turnId"] == first.structured_content["turnId"]
    assert len(client.calls) == 1
    assert transcript(running, "c1") == [("user", "hello"), ("assistant", "reply 1: hello")]


@pytest.mark.parametrize("transport", ["streamable", "sse"])
def test_a_retry_without_a_session_id_finds_the_conversation_its_key_started(serve: Serve, transport: str) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    arguments = {"query": "hello", "idempotencyKey": "first-call"}

    async def first_retry_and_fresh(session: ClientSession) -> list[CallToolResult]:
        first = await session.call_tool("assistant", arguments)
        retry = await session.call_tool("assistant", arguments)
        fresh = await session.call_tool("assistant", {"query": "hello", "idempotencyKey": "another-call"})
        return [first, retry, fresh]

    first, retry, fresh = with_session(running, first_retry_and_fresh, transport=transport)

    assert retry.structured_content["sessionId"] == first.structured_content["sessionId"]
    assert retry.structured_content["turnId"] == first.structured_content["turnId"]
    assert fresh.structured_content["sessionId"] != first.structured_content["sessionId"]
    assert len(client.calls) == 2


def test_two_clients_using_the_same_key_get_conversations_of_their_own(serve: Serve) -> None:
    # The docs' own example key: another client's equal key neither refuses this one nor reads its conversation.
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)

    ada = call_tool(running, "assistant", {"query": "My name is Ada.", "idempotencyKey": "call-1"})
    bob = call_tool(running, "assistant", {"query": "My name is Bob.", "idempotencyKey": "call-1"})
    same_words = call_tool(running, "assistant", {"query": "My name is Ada.", "idempotencyKey": "call-1"})

    sessions = {result.structured_content["sessionId"] for result in (ada, bob, same_words)}
    assert len(sessions) == 3 and not any(result.is_error for result in (ada, bob, same_words))
    assert texts(bob)[0] == "reply 2: My name is Bob." and texts(same_words)[0] == "reply 3: My name is Ada."
    assert transcript(running, ada.structured_content["sessionId"]) == [
        ("user", "My name is Ada."),
        ("assistant", "reply 1: My name is Ada."),
    ]
    assert [len(call) for call in client.calls] == [1, 1, 1]  # no client's call saw another's history


def test_a_key_without_a_session_id_outside_any_mcp_session_is_refused(serve: Serve) -> None:
    running = serve(make_agent(ScriptedChatClient()), enable_mcp_tool_trigger=True)
    call = {"name": "assistant", "arguments": {"query": "hello", "idempotencyKey": "call-1"}}

    reply = post_raw(running, MCP_PATH, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
    (answer,) = sse_data(reply.body)

    assert answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["error"]["code"] == "invalid_idempotency_key"
    assert "Send sessionId (a conversation id of your choosing) with the key" in answer["result"]["content"][0]["text"]


def test_the_same_key_with_another_query_is_refused_as_a_reused_key(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    call_tool(running, "assistant", {"query": "hello", "sessionId": "c1", "idempotencyKey": "k"})

    reused = call_tool(running, "assistant", {"query": "goodbye", "sessionId": "c1", "idempotencyKey": "k"})

    assert reused.is_error is True
    assert reused.structured_content["error"]["code"] == "idempotency_key_reused"
    assert len(client.calls) == 1


def test_a_call_that_outwaits_its_turn_says_how_to_collect_it_and_collecting_does_not_rerun(serve: Serve) -> None:
    release = threading.Event()

    def slow(messages: list[Message], options: Any) -> Message:
        release.wait(30)
        return default_reply(messages, 1)

    client = ScriptedChatClient(slow)
    running = serve(make_agent(client), settings=HostSettings(max_wait_seconds=0.5), enable_mcp_tool_trigger=True)

    pending = call_tool(running, "assistant", {"query": "take your time", "sessionId": "slow"})
    release.set()
    running.wait_idle()
    key = pending.structured_content["idempotencyKey"]
    collected = call_tool(running, "assistant", {"query": "take your time", "sessionId": "slow", "idempotencyKey": key})

    assert pending.is_error is True
    assert pending.structured_content["status"] == "pending"
    assert f'idempotencyKey "{key}"' in texts(pending)[0]
    assert (collected.is_error, texts(collected)[0]) == (False, "reply 1: take your time")
    assert collected.structured_content["turnId"] == pending.structured_content["turnId"]
    assert len(client.calls) == 1


def test_a_signal_the_host_delivers_twice_runs_the_agent_once(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    assert running.host is not None
    deliver_twice(running.host.scheduler, lambda name, key, signal: True)

    result = call_tool(running, "assistant", {"query": "hello", "sessionId": "c1"})
    running.wait_idle()

    assert texts(result)[0] == "reply 1: hello"
    assert len(client.calls) == 1
    assert transcript(running, "c1") == [("user", "hello"), ("assistant", "reply 1: hello")]


def test_an_mcp_turn_is_an_ordinary_turn_of_the_http_api(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    base = f"{CONVERSATIONS.format(agent='assistant')}/c1"

    mcp_turn = call_tool(running, "assistant", {"query": "from mcp", "sessionId": "c1"})
    http_turn = running.request("POST", f"{base}/turns", {"message": "from http"})
    read_back = running.request("GET", f"{base}/turns/{mcp_turn.structured_content['turnId']}")

    assert read_back.json()["text"] == texts(mcp_turn)[0] == "reply 1: from mcp"
    assert http_turn.json()["text"] == "reply 2: from http"
    assert [text for _, text in transcript(running, "c1")] == [
        "from mcp",
        "reply 1: from mcp",
        "from http",
        "reply 2: from http",
    ]


def test_a_retry_sent_while_the_first_call_still_waits_shares_its_turn(serve: Serve) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(messages: list[Message], options: Any) -> Message:
        started.set()
        release.wait(30)
        return default_reply(messages, 1)

    client = ScriptedChatClient(slow)
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    arguments = {"query": "hello", "sessionId": "c1", "idempotencyKey": "k-1"}

    async def first_then_retry(session: ClientSession) -> list[CallToolResult]:
        first = asyncio.ensure_future(session.call_tool("assistant", arguments))
        await asyncio.to_thread(started.wait, 30)
        retry = asyncio.ensure_future(session.call_tool("assistant", arguments))
        await asyncio.sleep(0.2)  # the retry's signal is queued behind the running turn
        release.set()
        return list(await asyncio.gather(first, retry))

    first, retry = with_session(running, first_then_retry)

    assert texts(first)[0] == texts(retry)[0] == "reply 1: hello"
    assert retry.structured_content["turnId"] == first.structured_content["turnId"]
    assert len(client.calls) == 1
    assert transcript(running, "c1") == [("user", "hello"), ("assistant", "reply 1: hello")]
