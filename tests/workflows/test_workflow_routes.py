"""The workflow run routes: start (wait or not, Idempotency-Key), read, errors; lost steps and retries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent, AgentExecutor, Executor, WorkflowBuilder, WorkflowContext, handler
from chat_clients import ScriptedChatClient
from faults import crash_after_activity, crash_before_episode_commit
from hosting import RunningHost
from parity_workflows import MATRIX, Models, fan_out_fan_in
from test_workflow_parity import comparable_output, run_in_process, without_random_ids

from agent_host import AgentFunctionApp, HostSettings, WorkflowRetryPolicy


def fan_app(models: Models) -> AgentFunctionApp:
    return AgentFunctionApp(workflows=[fan_out_fan_in(models)], settings=HostSettings())


@pytest.fixture
def fan(tmp_path: Path) -> Any:
    models = Models()
    running = RunningHost(lambda: fan_app(models), tmp_path)
    yield running, models
    running.stop()


def test_a_run_not_waited_for_answers_202_with_location_and_is_read_until_completed(fan: Any) -> None:
    host, _ = fan

    started = host.request("POST", "/api/workflows/fan/runs", {"input": "Pitch a cafe on the moon.", "wait": False})
    location = started.headers["location"]
    path = location[location.index("/api/") :]
    deadline = time.monotonic() + 30
    body = host.request("GET", path).json()
    while body["status"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
        body = host.request("GET", path).json()

    assert started.status == 202 and started.json()["status"] == "running"
    assert body["workflow"] == "fan" and body["runId"] == started.json()["runId"]
    assert body["outputs"][0].startswith("optimist: Re: Pitch a cafe on the moon.")
    assert body["pendingRequests"] == [] and body["error"] is None


def test_an_idempotency_key_names_one_run_and_refuses_another_input(fan: Any) -> None:
    host, models = fan
    key = {"Idempotency-Key": "launch-42"}

    first = host.request("POST", "/api/workflows/fan/runs", {"input": "Pitch a cafe."}, headers=key)
    again = host.request("POST", "/api/workflows/fan/runs", {"input": "Pitch a cafe."}, headers=key)
    other = host.request("POST", "/api/workflows/fan/runs", {"input": "Pitch a bakery."}, headers=key)

    assert first.status == again.status == 200
    assert again.json()["runId"] == first.json()["runId"]
    assert again.json()["outputs"] == first.json()["outputs"]
    assert len(models.calls()["writer"]) == 1
    assert (other.status, other.json()["error"]["code"]) == (409, "idempotency_key_reused")


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/api/workflows/nope/runs", {"input": "x"}, 404, "workflow_not_found"),
        ("/api/workflows/fan/runs", {"wait": True}, 400, "invalid_workflow_run"),
        # An object or list is JSON text for an agent start executor (as the published host gives it); a number is not.
        ("/api/workflows/fan/runs", {"input": 5}, 400, "invalid_workflow_input"),
        ("/api/workflows/fan/runs", {"input": "x", "timeoutSeconds": 0}, 400, "invalid_timeout"),
        ("/api/workflows/fan/runs/no-such-run", None, 404, "run_not_found"),
        ("/api/workflows/fan/runs/bad%20id", None, 400, "invalid_run_id"),
    ],
)
def test_bad_requests_get_a_json_error_naming_the_problem(
    fan: Any, path: str, body: Any, status: int, code: str
) -> None:
    host, _ = fan

    reply = host.request("POST" if body is not None else "GET", path, body)

    assert (reply.status, reply.json()["error"]["code"]) == (status, code)
    assert reply.json()["error"]["message"]


def test_a_run_survives_losing_every_episode_commit_and_every_activity_outcome_once(tmp_path: Path) -> None:
    build, value = MATRIX["fan-out and fan-in"]
    core_outputs, core_calls = run_in_process(build, value)
    models = Models()
    host = RunningHost(lambda: fan_app(models), tmp_path)
    lost: set[Any] = set()

    def once(key: Any) -> bool:
        if key in lost:
            return False
        lost.add(key)
        return True

    assert host.host is not None
    crash_before_episode_commit(
        host.host.orchestrations, lambda instance, commit: once(("episode", len(commit.history)))
    )
    crash_after_activity(host.host.orchestrations, lambda seq: once(("activity", seq)))
    try:
        body = host.request("POST", "/api/workflows/fan/runs", {"input": value, "timeoutSeconds": 60}).json()
    finally:
        host.stop()

    assert body["status"] == "completed", body
    assert without_random_ids([comparable_output(output) for output in body["outputs"]]) == core_outputs
    # Lost episodes replay with the same turn ids: every model ran once per turn, exactly as in process.
    assert without_random_ids(models.calls()) == core_calls
    assert any(kind == "episode" for kind, _ in lost) and any(kind == "activity" for kind, _ in lost)


class Flaky(Executor):
    """Fails its first two runs in this process, then passes its input on."""

    failures = 0

    @handler
    async def flaky(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        if Flaky.failures < 2:
            Flaky.failures += 1
            raise ConnectionError("the upstream service is busy")
        await ctx.yield_output(f"done: {text}")


def flaky_app(retry: WorkflowRetryPolicy | None) -> AgentFunctionApp:
    app = AgentFunctionApp(settings=HostSettings())
    app.add_workflow(WorkflowBuilder(name="flaky", start_executor=Flaky(id="flaky")).build(), retry=retry)
    return app


def test_a_retry_policy_retries_a_failing_executor_after_a_durable_backoff(tmp_path: Path) -> None:
    Flaky.failures = 0
    policy = WorkflowRetryPolicy(max_attempts=3, first_interval_seconds=0.05, max_interval_seconds=0.1)
    host = RunningHost(lambda: flaky_app(policy), tmp_path)
    try:
        body = host.request("POST", "/api/workflows/flaky/runs", {"input": "job"}).json()
    finally:
        host.stop()

    assert (body["status"], body["outputs"], Flaky.failures) == ("completed", ["done: job"], 2)


def test_without_a_retry_policy_a_failing_executor_fails_the_run_naming_it(tmp_path: Path) -> None:
    Flaky.failures = 0
    host = RunningHost(lambda: flaky_app(None), tmp_path)
    try:
        body = host.request("POST", "/api/workflows/flaky/runs", {"input": "job"}).json()
    finally:
        host.stop()

    assert body["status"] == "failed"
    assert body["error"]["code"] == "workflow_failed"
    assert "Executor 'flaky' failed" in body["error"]["message"]
    assert "the upstream service is busy" in body["error"]["message"]


class FlakyModel(ScriptedChatClient):
    """A model whose first call fails (a transient service error), then answers as the scripted one does."""

    failed = 0

    async def _inner_get_response(self, **kwargs: Any) -> Any:
        if FlakyModel.failed < 1:
            FlakyModel.failed += 1
            raise ConnectionError("the model service is busy")
        return await super()._inner_get_response(**kwargs)


def flaky_agent_app(retry: WorkflowRetryPolicy | None) -> AgentFunctionApp:
    node = AgentExecutor(Agent(FlakyModel(), name="writer"), id="writer")
    app = AgentFunctionApp(settings=HostSettings())
    app.add_workflow(WorkflowBuilder(name="drafts", start_executor=node).build(), retry=retry)
    return app


def test_a_retry_policy_takes_a_new_turn_after_a_failed_model_run(tmp_path: Path) -> None:
    FlakyModel.failed = 0
    policy = WorkflowRetryPolicy(max_attempts=2, first_interval_seconds=0.05, max_interval_seconds=0.05)
    host = RunningHost(lambda: flaky_agent_app(policy), tmp_path)
    try:
        body = host.request("POST", "/api/workflows/drafts/runs", {"input": "Draft a note."}).json()
        assert host.host is not None
        state = json.loads(host.host.store.read_state("workflow_agent_drafts_writer", body["runId"]) or "{}")
    finally:
        host.stop()

    assert body["status"] == "completed", body
    assert body["outputs"][0]["messages"][0]["contents"][0]["text"] == "reply 1: Draft a note."
    # The failed turn recorded its failure and nothing else; the retry is a turn of its own.
    assert [turn["status"] for turn in state["turns"].values()] == ["failed", "completed"]
    assert [message["text"] for message in state["messages"]] == ["Draft a note.", "reply 1: Draft a note."]


class Tally(Executor):
    """Counts its visits in executor state (saved and restored as core's checkpoints do); yields at the third."""

    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self.visits = 0

    @handler
    async def tally(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        self.visits += 1
        if self.visits >= 3:
            await ctx.yield_output(f"{text} after {self.visits} visits")
        else:
            await ctx.send_message(text)

    async def on_checkpoint_save(self) -> dict[str, int]:
        return {"visits": self.visits}

    async def on_checkpoint_restore(self, state: dict[str, int]) -> None:
        self.visits = state["visits"]


def test_each_run_starts_from_the_executors_state_as_built_not_from_another_runs(tmp_path: Path) -> None:
    def app() -> AgentFunctionApp:
        tally = Tally(id="tally")
        workflow = WorkflowBuilder(name="tally", start_executor=tally).add_edge(tally, tally).build()
        return AgentFunctionApp(workflows=[workflow], settings=HostSettings())

    host = RunningHost(app, tmp_path)
    try:
        first = host.request("POST", "/api/workflows/tally/runs", {"input": "one"}).json()
        second = host.request("POST", "/api/workflows/tally/runs", {"input": "two"}).json()
    finally:
        host.stop()

    assert first["outputs"] == ["one after 3 visits"]
    assert second["outputs"] == ["two after 3 visits"]
