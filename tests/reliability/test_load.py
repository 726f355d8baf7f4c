"""Load: 50 conversations x 20 turns at once over loopback HTTP; every turn answered, in order, none lost or doubled.

All conversations run at the same time, in two client styles: half send a turn and wait for its answer before the
next (interactive use), half queue all their turns at once without waiting (`wait: false`, each 202 received before
the next request) and then poll, so the host holds many queued turns per conversation and must run them in order.
The offline model states how many earlier messages it was sent, so each answer also proves its turn saw exactly the
conversation's earlier turns. Latency percentiles and throughput are printed (`pytest -s`).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from apps import build_app, make_agent
from hosting import RunningHost

from agent_host import OfflineChatClient

CONVERSATIONS = 50
TURNS = 20
WAIT_SECONDS = 60
BOUND_SECONDS = 150  # the whole run stops by itself after this, pass or fail
FIRST_POLL_SECONDS = 0.01
MAX_POLL_SECONDS = 0.25
BASE = "/api/agents/assistant/conversations"


def message_for(conversation: int, turn: int) -> str:
    return f"load {conversation} turn {turn}"


def expected_answer(conversation: int, turn: int) -> str:
    earlier = 2 * turn  # each earlier turn stored the user's message and the answer
    said = message_for(conversation, turn)
    return f'[offline model] You said: "{said}". ({earlier} earlier messages in this conversation.)'


@dataclass
class Measured:
    """Answers per conversation, and how long each turn took from its request to its answer."""

    answers: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    waited: list[float] = field(default_factory=list)
    queued: list[float] = field(default_factory=list)


async def waiting_client(session: aiohttp.ClientSession, url: str, conversation: int, measured: Measured) -> None:
    answers = []
    for turn in range(TURNS):
        started = time.perf_counter()
        body = {"message": message_for(conversation, turn), "timeoutSeconds": WAIT_SECONDS}
        async with session.post(f"{url}{BASE}/load-{conversation}/turns", json=body) as response:
            answer = await response.json()
            assert response.status == 200, (conversation, turn, response.status, answer)
        measured.waited.append(time.perf_counter() - started)
        answers.append(answer)
    measured.answers[conversation] = answers


async def queueing_client(session: aiohttp.ClientSession, url: str, conversation: int, measured: Measured) -> None:
    sent = []
    for turn in range(TURNS):
        body = {"message": message_for(conversation, turn), "wait": False}
        started = time.perf_counter()
        async with session.post(f"{url}{BASE}/load-{conversation}/turns", json=body) as response:
            accepted = await response.json()
            assert response.status == 202, (conversation, turn, response.status, accepted)
        sent.append((started, response.headers["Location"]))
    answers = []
    for started, location in sent:
        interval = FIRST_POLL_SECONDS
        while True:
            async with session.get(location) as response:
                answer = await response.json()
            if response.status != 202:
                break
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, MAX_POLL_SECONDS)
        assert response.status == 200, (conversation, location, response.status, answer)
        measured.queued.append(time.perf_counter() - started)
        answers.append(answer)
    measured.answers[conversation] = answers


async def run_load(url: str) -> tuple[Measured, float]:
    measured = Measured()
    connector = aiohttp.TCPConnector(limit=CONVERSATIONS)
    timeout = aiohttp.ClientTimeout(total=WAIT_SECONDS + 10)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        clients = [
            (waiting_client if n % 2 == 0 else queueing_client)(session, url, n, measured) for n in range(CONVERSATIONS)
        ]
        started = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*clients), BOUND_SECONDS)
        elapsed = time.perf_counter() - started
    return measured, elapsed


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def describe(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values) * 1000:.0f} ms, p99 {percentile(values, 0.99) * 1000:.0f} ms, "
        f"max {max(values) * 1000:.0f} ms"
    )


def test_fifty_conversations_of_twenty_turns_at_once_lose_and_reorder_nothing(tmp_path: Path) -> None:
    running = RunningHost(lambda: build_app(make_agent(OfflineChatClient())), tmp_path)
    assert running.host is not None
    try:
        measured, elapsed = asyncio.run(run_load(running.host.base_url))
        histories = [
            running.request("GET", f"{BASE}/load-{n}/messages").json()["messages"] for n in range(CONVERSATIONS)
        ]
        counts = [running.request("GET", f"{BASE}/load-{n}").json()["turnCount"] for n in range(CONVERSATIONS)]
    finally:
        running.stop()

    turns = CONVERSATIONS * TURNS
    print(
        f"\n{turns} turns from {CONVERSATIONS} conversations in {elapsed:.1f} s ({turns / elapsed:.0f} turns/s)"
        f"\n  waited for ({len(measured.waited)} turns): {describe(measured.waited)}"
        f"\n  queued, then polled ({len(measured.queued)} turns): {describe(measured.queued)}"
    )
    assert len(measured.waited) + len(measured.queued) == turns
    for n in range(CONVERSATIONS):
        assert [answer["text"] for answer in measured.answers[n]] == [expected_answer(n, t) for t in range(TURNS)]
        assert len({answer["turnId"] for answer in measured.answers[n]}) == TURNS
        expected_history = [
            pair for t in range(TURNS) for pair in (("user", message_for(n, t)), ("assistant", expected_answer(n, t)))
        ]
        assert [(message["role"], message["text"]) for message in histories[n]] == expected_history
    assert counts == [TURNS] * CONVERSATIONS
