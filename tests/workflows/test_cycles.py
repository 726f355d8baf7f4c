"""Cycles: a node visited again is sent only what it has not seen (architecture.md, failure 17; L3-4, L3-9).

Core re-sends the whole upstream conversation on every visit of a `full` node, so in process a cycle's history
grows quadratically; hosted, each visit adds the new messages only, so each conversation grows linearly.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from agent_framework import (
    AgentExecutor,
    AgentExecutorResponse,
    AgentResponse,
    Executor,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from hosting import RunningHost
from parity_workflows import Models

from agent_host import AgentFunctionApp, HostSettings, RetentionSettings

VISITS = 20


class Counter(Executor):
    """Sends the reply back to the writer until the writer has been visited VISITS times; then yields it."""

    limit = VISITS

    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self.rounds = 0

    @handler
    async def count(self, response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorResponse, str]) -> None:
        self.rounds += 1
        if self.rounds >= self.limit:
            await ctx.yield_output(response.agent_response.text)
        else:
            await ctx.send_message(response)

    async def on_checkpoint_save(self) -> dict[str, int]:
        return {"rounds": self.rounds}

    async def on_checkpoint_restore(self, state: dict[str, int]) -> None:
        self.rounds = state.get("rounds", 0)


class Feedback(Counter):
    """Like Counter, but hands the critique back to the writer as a person's message, on the whole conversation."""

    limit = 10

    @handler
    async def count(self, response: AgentExecutorResponse, ctx: WorkflowContext[AgentExecutorResponse, str]) -> None:
        self.rounds += 1
        if self.rounds >= self.limit:
            await ctx.yield_output(response.agent_response.text)
            return
        note = Message("user", [f"Round {self.rounds}: {response.agent_response.text[:40]}"])
        conversation = [*response.full_conversation, note]
        await ctx.send_message(AgentExecutorResponse(self.id, AgentResponse(messages=[note]), conversation))


def loop_app(
    models: Models, settings: HostSettings | None = None, counter: type[Counter] = Counter
) -> AgentFunctionApp:
    writer = AgentExecutor(models.agent("writer"), id="writer")
    critic = AgentExecutor(models.agent("critic"), id="critic")
    counter = counter(id="counter")
    workflow = (
        WorkflowBuilder(name="loop", start_executor=writer, max_iterations=3 * VISITS + 5)
        .add_edge(writer, critic)
        .add_edge(critic, counter)
        .add_edge(counter, writer)
        .build()
    )
    return AgentFunctionApp(workflows=[workflow], settings=settings or HostSettings())


def test_twenty_visits_of_a_cycle_grow_each_conversation_linearly_and_send_only_new_messages(tmp_path: Path) -> None:
    models = Models()
    host = RunningHost(lambda: loop_app(models), tmp_path)
    try:
        start = {"input": "Improve this haiku.", "timeoutSeconds": 120}
        reply = host.request("POST", "/api/workflows/loop/runs", start)
        body = reply.json()
        run_id = body["runId"]
        assert host.host is not None
        writer_state = json.loads(host.host.store.read_state("workflow_agent_loop_writer", run_id) or "{}")
    finally:
        host.stop()

    calls = models.calls()
    sent_per_visit = [len(call) for call in calls["writer"]]
    assert body["status"] == "completed", body
    assert len(calls["writer"]) == VISITS and len(calls["critic"]) == VISITS
    # Each visit's model call is the stored history plus what is new: two messages more than the visit before
    # (the critic's reply it was sent, and its own reply), never the whole conversation again.
    assert [b - a for a, b in itertools.pairwise(sent_per_visit)] == [2] * (VISITS - 1)
    assert len(writer_state["messages"]) == 1 + 2 * VISITS - 1


def test_messages_retention_evicted_from_a_node_are_never_sent_to_it_again(tmp_path: Path) -> None:
    models = Models()
    small = HostSettings(retention=RetentionSettings(mode="auto", max_state_bytes=4096))
    host = RunningHost(lambda: loop_app(models, small, Feedback), tmp_path)
    try:
        start = {"input": "Improve this haiku.", "timeoutSeconds": 120}
        body = host.request("POST", "/api/workflows/loop/runs", start).json()
        assert host.host is not None
        writer_state = json.loads(host.host.store.read_state("workflow_agent_loop_writer", body["runId"]) or "{}")
    finally:
        host.stop()

    writer_calls = models.calls()["writer"]
    first_note = writer_calls[1][-1]
    last_call = writer_calls[-1]
    assert body["status"] == "completed", body
    assert writer_state["truncation"]["evictedMessages"] > 0
    # Evicted from the writer's conversation, the first note is not re-sent on any later visit, though every visit
    # brings the whole conversation again: the orchestrator's receipts, not the entity's history, say what the
    # writer has been given (L3-6).
    assert first_note["contents"][0]["text"].startswith("Round 1:")
    assert first_note not in last_call
    assert len(last_call) < len(writer_calls[-1 - 3]) + 3 * 3
