"""The conversation client seam on durabletask (`DurableTaskConversationClient`): reads give the read model, a
backend that cannot answer is `storage_unavailable`, a turn carries the caller's trace, two parts do nothing on the
worker (watching idle expiry: each conversation entity schedules its own checks; importing published conversations:
not built), and the list's pages (`TaskHubConversations`) come with their stored states when asked for."""

from __future__ import annotations

import asyncio
import socket
from typing import Any, cast

import pytest
from apps import make_agent
from chat_clients import ScriptedChatClient
from durabletask.client import TaskHubGrpcClient
from durabletask.entities import EntityInstanceId
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from agent_host import HostSettings, StorageUnavailableError
from agent_host._clock import SYSTEM_CLOCK
from agent_host._contract import AgentRoute
from agent_host.worker import AgentClient
from agent_host.worker._conversation_client import DurableTaskConversationClient, TaskHubConversations

from .workers import agent_client, running_worker

ROUTE = AgentRoute(name="assistant", entity_name="conversation_assistant", history="")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_reads_give_the_read_model_and_nothing_is_imported_or_watched(hub: str) -> None:
    raw = TaskHubGrpcClient(host_address=hub)
    conversations = DurableTaskConversationClient(raw, ROUTE)

    with running_worker(hub, [make_agent(ScriptedChatClient())]), agent_client(hub) as client:
        before = asyncio.run(conversations.read("c1"))
        client.conversation("assistant", "c1").send("Hello")
        after = asyncio.run(conversations.read("c1"))
    imported = asyncio.run(conversations.history_to_import("c1", SYSTEM_CLOCK.now_ms()))
    watched = asyncio.run(conversations.watch_expiry("c1", SYSTEM_CLOCK).finish(1))
    raw.close()

    assert before is None
    assert after is not None and after.turn_count == 1
    assert [turn.text for turn in after.receipts()] == ["reply 1: Hello"]
    assert imported is None and watched is None


def test_a_backend_that_cannot_be_reached_is_storage_unavailable() -> None:
    raw = TaskHubGrpcClient(host_address=f"localhost:{closed_port()}")
    conversations = DurableTaskConversationClient(raw, ROUTE)

    with pytest.raises(StorageUnavailableError) as read:
        asyncio.run(conversations.read("c1"))
    with pytest.raises(StorageUnavailableError) as signal:
        asyncio.run(conversations.signal("c1", "run", {"turnId": "0000000000a1234abcd", "message": "Hello"}))
    with pytest.raises(StorageUnavailableError) as send:
        AgentClient(raw, settings=HostSettings()).conversation("assistant", "c1").send("Hello")

    with pytest.raises(StorageUnavailableError) as listed:
        asyncio.run(
            TaskHubConversations(raw).conversation_page(ROUTE, top=5, continuation_token=None, fetch_state=False)
        )
    raw.close()

    assert read.value.code == signal.value.code == send.value.code == listed.value.code == "storage_unavailable"
    assert "UNAVAILABLE" in read.value.message and "refused the signal" in signal.value.message
    assert "could not list the conversations" in listed.value.message


def test_a_page_fetched_with_state_carries_each_conversations_stored_text(hub: str) -> None:
    raw = TaskHubGrpcClient(host_address=hub)

    with running_worker(hub, [make_agent(ScriptedChatClient())]), agent_client(hub) as client:
        for conversation in ("c1", "c2", "c3"):
            client.conversation("assistant", conversation).send(f"Hello from {conversation}")
        first = asyncio.run(
            TaskHubConversations(raw).conversation_page(ROUTE, top=2, continuation_token=None, fetch_state=True)
        )
        stored = raw.get_entity(EntityInstanceId(ROUTE.entity_name, "c1"), include_state=True)
    raw.close()

    assert [item["entityId"] for item in first.items] == [
        {"name": "conversation_assistant", "key": "c1"},
        {"name": "conversation_assistant", "key": "c2"},
    ]
    assert stored is not None and first.items[0]["state"] == stored.get_state()
    assert "Hello from c1" in first.items[0]["state"] and "Hello from c2" in first.items[1]["state"]
    assert first.continuation_token == "after:c2"


class SignalRecorder:
    """The part of a durabletask client a signal uses, recording what it is sent."""

    def __init__(self) -> None:
        self.signals: list[tuple[EntityInstanceId, str, dict[str, Any]]] = []

    def signal_entity(self, entity: EntityInstanceId, operation: str, payload: dict[str, Any]) -> None:
        self.signals.append((entity, operation, payload))


def test_a_turn_signalled_inside_a_span_carries_the_callers_trace_context() -> None:
    recorder = SignalRecorder()
    conversations = DurableTaskConversationClient(cast(TaskHubGrpcClient, recorder), ROUTE)
    caller = SpanContext(trace_id=0xA1, span_id=0xB2, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    with trace.use_span(NonRecordingSpan(caller)):
        asyncio.run(conversations.signal("c1", "run", {"turnId": "0000000000a1234abcd", "message": "Hello"}))
        asyncio.run(conversations.signal("c1", "delete", {"changeId": "ab12"}))

    (entity, _, turn), (_, _, delete) = recorder.signals
    assert str(entity) == "@conversation_assistant@c1"
    assert turn["traceContext"]["traceparent"] == f"00-{0xA1:032x}-{0xB2:016x}-01"
    assert "traceContext" not in delete
