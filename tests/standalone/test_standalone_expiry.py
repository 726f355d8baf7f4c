"""Idle expiry on the standalone worker: each conversation entity schedules its own idle check as a delayed signal,
run here on durabletask's in-memory backend with the test's clock (`clocked_backend.py`), never the machine's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from apps import make_agent
from chat_clients import ScriptedChatClient
from clocks import EPOCH_MS, ManualClock
from durabletask.client import TaskHubGrpcClient
from durabletask.entities import EntityInstanceId
from durabletask.worker import TaskHubGrpcWorker
from hosting import free_port

from agent_host import ConversationNotFoundError, HostSettings
from agent_host._contract import AgentRoute
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host.worker import AgentClient, AgentWorker, worker_options
from agent_host.worker._conversation_client import DurableTaskConversationClient
from agent_host.worker._expiry import MIN_RECHECK_MS

from .clocked_backend import ClockedBackend, DelayedSignal

TTL_SECONDS = 3600.0
TTL_MS = int(TTL_SECONDS * 1000)
ENTITY = "@conversation_assistant@c1"
ROUTE = AgentRoute(name="assistant", entity_name="conversation_assistant", history="")


@pytest.fixture(scope="module")
def clocked() -> Iterator[tuple[ClockedBackend, str]]:
    port = free_port()
    backend = ClockedBackend(ManualClock(), port)
    backend.start()
    yield backend, f"localhost:{port}"
    backend.stop()


@pytest.fixture
def backend(clocked: tuple[ClockedBackend, str]) -> Iterator[ClockedBackend]:
    """The clocked backend, emptied, its clock back at the test epoch."""
    backend, _ = clocked
    backend.reset()
    backend.clock.ms = EPOCH_MS
    CONVERSATION_CACHE.clear()
    yield backend
    CONVERSATION_CACHE.clear()


@pytest.fixture
def address(clocked: tuple[ClockedBackend, str]) -> str:
    return clocked[1]


@contextmanager
def hosting(backend: ClockedBackend, address: str, ttl: float | None = TTL_SECONDS) -> Iterator[AgentClient]:
    """A worker hosting the assistant with `ttl` (None: the settings' TTL, `TTL_SECONDS`), and a client."""
    worker = TaskHubGrpcWorker(host_address=address, **worker_options())
    hosted = AgentWorker(worker, settings=HostSettings(conversation_ttl_seconds=TTL_SECONDS), clock=backend.clock)
    hosted.add_agent(make_agent(ScriptedChatClient()), conversation_ttl=ttl)
    raw = TaskHubGrpcClient(host_address=address)
    worker.start()
    try:
        yield AgentClient(raw, settings=HostSettings(), clock=backend.clock)
    finally:
        worker.stop()
        raw.close()


def check(at_ms: int, created_at: int, signal_at: int | None = None) -> DelayedSignal:
    body = {"checkAt": at_ms, "signalAt": at_ms if signal_at is None else signal_at, "createdAt": created_at}
    return DelayedSignal(signal_at or at_ms, ENTITY, "expire_if_idle", json.dumps(body))


def test_a_conversation_idle_past_its_ttl_is_deleted(backend: ClockedBackend, address: str) -> None:
    with hosting(backend, address) as client:
        conversation = client.conversation("assistant", "c1")
        conversation.send("My name is Ada.")
        scheduled = backend.delayed()
        backend.advance(TTL_SECONDS - 1)
        kept = conversation.read()
        backend.advance(1)
        with pytest.raises(ConversationNotFoundError) as gone:
            conversation.read()

    assert scheduled == [check(EPOCH_MS + TTL_MS, EPOCH_MS)]
    assert kept["turnCount"] == 1
    assert gone.value.status == 404 and gone.value.code == "conversation_not_found"
    assert "was deleted" in gone.value.message
    assert backend.delayed() == []  # the check that deleted it schedules no other


def test_a_conversation_touched_before_its_ttl_is_kept_and_its_expiry_moves(
    backend: ClockedBackend, address: str
) -> None:
    half = TTL_SECONDS / 2
    with hosting(backend, address) as client:
        conversation = client.conversation("assistant", "c1")
        conversation.send("My name is Ada.")
        backend.advance(half)
        conversation.send("What is my name?")
        before_check = backend.delayed()
        backend.advance(half)  # the first check finds it touched half a TTL ago
        after_check = backend.delayed()
        kept = conversation.read()
        backend.advance(half)
        with pytest.raises(ConversationNotFoundError):
            conversation.read()

    touched = EPOCH_MS + TTL_MS // 2
    assert before_check == [check(EPOCH_MS + TTL_MS, EPOCH_MS)]  # a turn of a conversation adds no second check
    assert after_check == [check(touched + TTL_MS, EPOCH_MS)]
    assert kept["turnCount"] == 2


def test_with_the_ttl_off_a_conversation_is_kept(backend: ClockedBackend, address: str) -> None:
    with hosting(backend, address, ttl=0) as client:
        conversation = client.conversation("assistant", "c1")
        conversation.send("My name is Ada.")
        scheduled = backend.delayed()
        backend.advance(365 * 24 * 3600)
        kept = conversation.read()

    assert scheduled == []
    assert kept["turnCount"] == 1


def test_a_deleted_conversations_check_ends_and_a_new_one_of_its_id_has_its_own(
    backend: ClockedBackend, address: str
) -> None:
    with hosting(backend, address) as client:
        conversation = client.conversation("assistant", "c1")
        conversation.send("My name is Ada.")
        backend.advance(10)
        assert conversation.delete() is True
        backend.advance(10)
        conversation.send("Hello again.")
        both = backend.delayed()
        backend.advance(TTL_SECONDS - 20)  # the first conversation's check comes due
        left = backend.delayed()
        kept = conversation.read()

    second = EPOCH_MS + 20_000
    assert both == [check(EPOCH_MS + TTL_MS, EPOCH_MS), check(second + TTL_MS, second)]
    assert left == [check(second + TTL_MS, second)]
    assert kept["turnCount"] == 1


def test_a_check_delivered_before_its_time_asks_again_that_much_later(backend: ClockedBackend, address: str) -> None:
    raw = TaskHubGrpcClient(host_address=address)
    early = {"checkAt": EPOCH_MS + TTL_MS, "signalAt": EPOCH_MS + TTL_MS, "createdAt": EPOCH_MS}
    with hosting(backend, address) as client:
        client.conversation("assistant", "c1").send("My name is Ada.")
        backend.advance(60)
        # As a backend whose clock is a TTL less a minute ahead of the worker's would deliver the scheduled check.
        raw.signal_entity(EntityInstanceId("conversation_assistant", "c1"), "expire_if_idle", early)
        backend.wait_idle()
        kept = asyncio.run(DurableTaskConversationClient(raw, ROUTE).read("c1"))
    raw.close()

    remaining = TTL_MS - 60_000
    assert backend.delayed() == [
        check(EPOCH_MS + TTL_MS, EPOCH_MS),
        check(EPOCH_MS + TTL_MS, EPOCH_MS, signal_at=EPOCH_MS + TTL_MS + max(remaining, MIN_RECHECK_MS)),
    ]
    assert kept is not None and not kept.is_deleted


def test_a_check_that_finds_the_ttl_turned_off_keeps_the_conversation_and_ends(
    backend: ClockedBackend, address: str
) -> None:
    with hosting(backend, address) as client:
        client.conversation("assistant", "c1").send("My name is Ada.")
    with hosting(backend, address, ttl=0) as client:  # redeployed with expiry off
        backend.advance(TTL_SECONDS)
        kept = client.conversation("assistant", "c1").read()

    assert kept["turnCount"] == 1
    assert backend.delayed() == []


def test_a_ttl_under_a_minute_is_refused_naming_the_parameter(address: str) -> None:
    hosted = AgentWorker(TaskHubGrpcWorker(host_address=address, **worker_options()), settings=HostSettings())

    with pytest.raises(ValueError, match=r"add_agent\('assistant'\): conversation_ttl=30 must be 0"):
        hosted.add_agent(make_agent(ScriptedChatClient()), conversation_ttl=30)
