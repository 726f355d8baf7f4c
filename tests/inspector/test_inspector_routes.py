"""The inspector's routes end to end on the local host: absent when off, behind the key when on, and what they show
of a conversation (compaction, receipts, sizes) and of a workflow's runs."""

from __future__ import annotations

import base64
import hashlib
import re
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


def test_the_page_is_one_document_that_may_load_nothing_but_itself(host: RunningHost) -> None:
    reply = host.request("GET", "/api/inspector")

    html = reply.body.decode("utf-8")
    script = re.search(r"<script>(.*)</script>", html, re.S)
    style = re.search(r"<style>(.*)</style>", html, re.S)
    policy = reply.headers["content-security-policy"]
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/html; charset=utf-8"
    assert script is not None and style is not None
    assert f"script-src 'sha256-{base64.b64encode(hashlib.sha256(script[1].encode()).digest()).decode()}'" in policy
    assert f"style-src 'sha256-{base64.b64encode(hashlib.sha256(style[1].encode()).digest()).decode()}'" in policy
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert re.findall(r"https?://(?!www\.w3\.org/2000/svg)", html) == []
    assert re.findall(r"\b(?:src|href)=\"(?!#|data:)", html) == []
    assert reply.headers["referrer-policy"] == "no-referrer"
    assert reply.headers["cache-control"] == "no-store"


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


def test_app_names_the_hosted_agents_and_workflows(host: RunningHost) -> None:
    reply = host.request("GET", "/api/inspector/app")

    assert reply.json() == {
        "agents": [{"name": "assistant", "history": "durable"}, {"name": "broken", "history": "durable"}],
        "workflows": [{"name": "review"}, {"name": "cleanup"}, {"name": "shout"}],
    }


def test_the_conversation_shows_what_compaction_excluded_and_the_summary_that_replaced_it(host: RunningHost) -> None:
    talk(host, "My name is Ada.", "use get_weather for Paris", "My city is Paris.", "I am a pilot.", "My pet is Rex.")

    body = host.request("GET", "/api/inspector/agents/assistant/conversations/c1").json()

    messages = {message["messageId"]: message for message in body["messages"]}
    summaries = [message for message in body["messages"] if "summaryOf" in message]
    excluded = [message for message in body["messages"] if message["excluded"]]
    replaced = {message_id for summary in summaries for message_id in summary["summaryOf"]}
    assert summaries and all(summary["text"].startswith("[offline model] Summary of") for summary in summaries)
    assert [summary["excluded"] for summary in summaries].count(False) == 1  # older summaries are summarized too
    assert {message["messageId"] for message in excluded} == replaced
    assert {message["excludeReason"] for message in excluded} == {"summarized"}
    assert all(
        messages[message_id]["summarizedBy"] == summary["messageId"]
        for summary in summaries
        for message_id in summary["summaryOf"]
    )
    assert "My name is Ada." in [message["text"] for message in excluded]
    assert body["conversation"]["messageCount"] == len(body["messages"])


def test_the_turn_records_are_the_conversations_receipts_oldest_first(host: RunningHost) -> None:
    talk(host, "My name is Ada.", "use get_weather for Paris")
    ids = [host.request("POST", TURNS, {"message": "What is my name?"}).json()["turnId"]]

    body = host.request("GET", "/api/inspector/agents/assistant/conversations/c1").json()

    turns = body["turns"]
    messages = {message["messageId"] for message in body["messages"]}
    assert len(turns) == body["conversation"]["turnCount"] == 3
    assert turns[-1]["turnId"] == ids[0]
    assert [turn["completedAt"] for turn in turns] == sorted(turn["completedAt"] for turn in turns)
    assert all(turn["status"] == "completed" and set(turn["answerMessageIds"]) <= messages for turn in turns)
    assert len(turns[1]["answerMessageIds"]) == 3  # the tool call, its result and the answer
    assert turns[0]["usage"]["total_token_count"] > 0


def test_the_sizes_add_up_to_the_stored_state_and_the_budget_lines_follow_the_retention(host: RunningHost) -> None:
    talk(host, "My name is Ada.")
    settings = {"mode": "auto", "maxStateBytes": 10000, "highWatermark": 0.8, "lowWatermark": 0.5}
    assert host.request("PUT", "/api/agents/assistant/conversations/c1/retention", settings).status == 200

    body = host.request("GET", "/api/inspector/agents/assistant/conversations/c1").json()
    summary = host.request("GET", "/api/agents/assistant/conversations/c1").json()

    sections = body["bytes"]
    assert sections["total"] == summary["stateBytes"] == body["conversation"]["stateBytes"]
    assert sum(value for name, value in sections.items() if name != "total") == sections["total"]
    assert sections["messages"] > sections["turnRecords"] > 0
    assert body["budget"] == {"maxStateBytes": 10000, "highWatermarkBytes": 8000, "lowWatermarkBytes": 5000}


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/inspector/agents/assistant/conversations/never", 404, "conversation_not_found"),
        ("/api/inspector/agents/nobody/conversations/c1", 404, "agent_not_found"),
        ("/api/inspector/agents/assistant/conversations/bad..id", 400, "invalid_conversation_id"),
        ("/api/inspector/workflows/nothing/runs", 404, "workflow_not_found"),
        ("/api/inspector/workflows/review/runs?top=0", 400, "invalid_query"),
    ],
    ids=["unknown-conversation", "unknown-agent", "invalid-id", "unknown-workflow", "bad-top"],
)
def test_what_the_inspector_cannot_show_it_says_why(host: RunningHost, path: str, status: int, code: str) -> None:
    reply = host.request("GET", path)

    assert (reply.status, reply.json()["error"]["code"]) == (status, code)


def test_a_deleted_conversation_reads_as_deleted(host: RunningHost) -> None:
    talk(host, "My name is Ada.", "What is my name?")
    host.request("DELETE", "/api/agents/assistant/conversations/c1")

    reply = host.request("GET", "/api/inspector/agents/assistant/conversations/c1")

    # The tombstone is what the host holds: shown as such, where an id that never existed is 404.
    assert reply.status == 200
    assert reply.json()["conversationId"] == "c1"
    assert reply.json()["deleted"]["removedTurns"] == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", reply.json()["deleted"]["deletedAt"])
    assert "messages" not in reply.json()


def test_a_failed_turns_receipt_keeps_what_it_was_sent(tmp_path: Path) -> None:
    running = RunningHost(inspector_app, tmp_path)
    try:
        sent = "Please help. " * 100  # 1300 characters: the receipt keeps 1000
        failed = running.request("POST", "/api/agents/broken/conversations/f1/turns", {"message": sent})
        bundle = running.request("GET", "/api/inspector/agents/broken/conversations/f1").json()
    finally:
        running.stop()

    (turn,) = bundle["turns"]
    assert failed.status == 502 and turn["status"] == "failed"
    assert turn["error"] == failed.json()["error"]
    assert turn["input"] == {"message": sent[:999] + "…"}
    assert bundle["messages"] == []  # nothing of the failed turn is in the transcript


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
