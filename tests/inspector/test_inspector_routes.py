"""The inspector's routes end to end on the local host: absent when off, behind the key when on, and a workflow's runs
(read from the task hub's instances). What it shows of a conversation runs on the in-memory app
(tests/front_ends/test_inspector_views.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hosting import RunningHost
from inspector_apps import inspector_app

from agent_host._inspector.settings import INSPECTOR_SETTING

INSPECTOR_ROUTES = [
    "/api/inspector",
    "/api/inspector/app",
    "/api/inspector/agents/assistant/conversations/c1",
    "/api/inspector/workflows/review/runs",
]
TURNS = "/api/agents/assistant/conversations/c1/turns"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[RunningHost]:
    running = RunningHost(inspector_app, tmp_path)
    yield running
    running.stop()


def talk(host: RunningHost, *messages: str) -> None:
    for message in messages:
        reply = host.request("POST", TURNS, {"message": message})
        assert reply.status == 200, reply.body


@pytest.mark.parametrize("setting", [None, "", "0", "off"], ids=["unset", "empty", "zero", "off"])
def test_off_the_inspector_routes_do_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    if setting is None:
        monkeypatch.delenv(INSPECTOR_SETTING, raising=False)
    else:
        monkeypatch.setenv(INSPECTOR_SETTING, setting)
    running = RunningHost(lambda: inspector_app(inspector=None), tmp_path)
    try:
        talk(running, "My name is Ada.")
        replies = {path: running.request("GET", path) for path in INSPECTOR_ROUTES}
        listed = running.request("GET", "/api/agents/assistant/conversations")
    finally:
        running.stop()

    assert {path: (reply.status, reply.json()["error"]["code"]) for path, reply in replies.items()} == {
        path: (404, "not_found") for path in INSPECTOR_ROUTES
    }
    assert listed.json()["conversations"] == [{"conversationId": "c1"}]


def test_the_setting_turns_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INSPECTOR_SETTING, "1")
    running = RunningHost(lambda: inspector_app(inspector=None), tmp_path)
    try:
        reply = running.request("GET", "/api/inspector")
    finally:
        running.stop()

    assert reply.status == 200
    assert b"agent-host inspector" in reply.body


def test_the_inspector_needs_the_function_key_like_every_route(tmp_path: Path) -> None:
    running = RunningHost(inspector_app, tmp_path, function_key="secret-key")
    try:
        without = {path: running.request("GET", path).status for path in INSPECTOR_ROUTES}
        page = running.request("GET", "/api/inspector?code=secret-key")
        hosted = running.request("GET", "/api/inspector/app", headers={"x-functions-key": "secret-key"})
    finally:
        running.stop()

    assert without == dict.fromkeys(INSPECTOR_ROUTES, 401)
    assert page.status == 200 and b"<main" in page.body
    assert hosted.json()["agents"][0] == {"name": "assistant", "history": "durable"}


def test_a_workflows_runs_are_listed_with_their_status_and_only_its_own(host: RunningHost) -> None:
    waiting = host.request("POST", "/api/workflows/review/runs", {"input": "Draft a note.", "wait": True}).json()
    done = host.request("POST", "/api/workflows/shout/runs", {"input": "hello", "wait": True}).json()

    review = host.request("GET", "/api/inspector/workflows/review/runs").json()
    shout = host.request("GET", "/api/inspector/workflows/shout/runs").json()

    assert waiting["status"] == "waiting_for_input" and done["status"] == "completed"
    assert [(run["runId"], run["status"]) for run in review["runs"]] == [(waiting["runId"], "waiting_for_input")]
    assert [(run["runId"], run["status"], run["runtimeStatus"]) for run in shout["runs"]] == [
        (done["runId"], "completed", "Completed")
    ]
    assert review["continuationToken"] is None and review["workflow"] == "review"
    assert review["runs"][0]["createdTime"].endswith("Z")


def test_run_pages_go_on_where_the_last_one_ended(host: RunningHost) -> None:
    started = {host.request("POST", "/api/workflows/shout/runs", {"input": f"n{i}"}).json()["runId"] for i in range(3)}
    host.request("POST", "/api/workflows/review/runs", {"input": "Draft."})

    first = host.request("GET", "/api/inspector/workflows/shout/runs?top=1").json()
    rest = host.request(
        "GET", f"/api/inspector/workflows/shout/runs?top=10&continuationToken={first['continuationToken']}"
    ).json()

    assert len(first["runs"]) == 1 and first["continuationToken"] is not None
    assert {run["runId"] for run in first["runs"] + rest["runs"]} == started
    assert rest["continuationToken"] is None
