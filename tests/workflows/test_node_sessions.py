"""Agent nodes keep apart in an external history store: each node's core session id is qualified by its own
entity name (`{entity}.{runId}`, L3-7; architecture.md failure 11), though both nodes' conversations share the key."""

from __future__ import annotations

from pathlib import Path

from agent_framework import Agent, AgentExecutor, WorkflowBuilder
from history_providers import SqliteHistoryProvider
from hosting import RunningHost
from parity_fakes import CallLog, RecordingChatClient

from agent_host import AgentFunctionApp, HostSettings


def test_two_agent_nodes_sharing_one_external_history_provider_keep_their_conversations_apart(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite3"

    def app() -> AgentFunctionApp:
        history = SqliteHistoryProvider(store)
        log = CallLog()
        writer = AgentExecutor(Agent(RecordingChatClient(log), name="writer", context_providers=[history]), id="writer")
        editor = AgentExecutor(Agent(RecordingChatClient(log), name="editor", context_providers=[history]), id="editor")
        workflow = WorkflowBuilder(name="pair", start_executor=writer).add_edge(writer, editor).build()
        return AgentFunctionApp(workflows=[workflow], settings=HostSettings())

    host = RunningHost(app, tmp_path / "state")
    try:
        body = host.request("POST", "/api/workflows/pair/runs", {"input": "Write a limerick."}).json()
    finally:
        host.stop()

    stored = SqliteHistoryProvider(store).stored()
    run_id = body["runId"]
    assert body["status"] == "completed"
    assert sorted(stored) == [f"workflow_agent_pair_editor.{run_id}", f"workflow_agent_pair_writer.{run_id}"]
    assert [m["role"] for m in stored[f"workflow_agent_pair_writer.{run_id}"]] == ["user", "assistant"]
    assert [m["role"] for m in stored[f"workflow_agent_pair_editor.{run_id}"]] == ["user", "assistant", "assistant"]
