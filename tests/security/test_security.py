"""Keys, isolation between agents, no secrets in logs, and enforced limits."""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost

from agent_host import HostSettings, OfflineChatClient

ROOT = Path(__file__).resolve().parents[2]
KEY = "k-Secret-Function-Key-4242"


def two_agents():
    return build_app(make_agent(OfflineChatClient(), "alpha"), make_agent(OfflineChatClient(), "beta"))


def test_function_routes_need_the_key_and_health_does_not(tmp_path: Path) -> None:
    running = RunningHost(two_agents, tmp_path, function_key=KEY)
    try:
        health = running.request("GET", "/api/health")
        missing = running.request("POST", "/api/agents/alpha/conversations/c1/turns", {"message": "hi"})
        wrong = running.request(
            "POST", "/api/agents/alpha/conversations/c1/turns", {"message": "hi"}, headers={"x-functions-key": "nope"}
        )
        header = running.request(
            "POST", "/api/agents/alpha/conversations/c1/turns", {"message": "hi"}, headers={"x-functions-key": KEY}
        )
        query = running.request("GET", f"/api/agents/alpha/conversations/c1?code={KEY}")
    finally:
        running.stop()

    assert health.status == 200
    assert missing.status == 401 and missing.json()["error"]["code"] == "unauthorized"
    assert wrong.status == 401
    assert header.status == 200 and header.json()["text"].startswith("[offline model]")
    assert query.status == 200 and query.json()["turnCount"] == 1


def test_the_same_conversation_id_under_two_agents_is_two_conversations(tmp_path: Path) -> None:
    running = RunningHost(two_agents, tmp_path)
    try:
        running.request("POST", "/api/agents/alpha/conversations/shared/turns", {"message": "My name is Ada."})
        beta = running.request("POST", "/api/agents/beta/conversations/shared/turns", {"message": "What is my name?"})
        alpha = running.request("POST", "/api/agents/alpha/conversations/shared/turns", {"message": "What is my name?"})
        beta_messages = running.request("GET", "/api/agents/beta/conversations/shared/messages").json()
    finally:
        running.stop()

    assert "don't know your name" in beta.json()["text"]
    assert alpha.json()["text"] == "[offline model] Your name is Ada."
    assert beta_messages["messages"][0]["text"] == "What is my name?"


@pytest.mark.parametrize("conversation", ["..%2Fbeta%2Fshared", "shared%2F..%2F..%2Fbeta", "%2E%2E", "beta@shared"])
def test_no_conversation_id_reaches_another_agents_entity(tmp_path: Path, conversation: str) -> None:
    running = RunningHost(two_agents, tmp_path)
    try:
        running.request("POST", "/api/agents/beta/conversations/shared/turns", {"message": "beta only"})
        reply = running.request("GET", f"/api/agents/alpha/conversations/{conversation}/messages")
    finally:
        running.stop()

    assert reply.status in (400, 404)
    assert "beta only" not in reply.body.decode()


def test_no_secret_appears_in_the_logs_of_a_full_demo_run(tmp_path: Path, monkeypatch, caplog) -> None:
    connection = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWFjY291bnQta2V5;"
    monkeypatch.setenv("AzureWebJobsStorage", connection)
    monkeypatch.chdir(ROOT)
    sys.modules.pop("function_app", None)
    from demo_replay import replay_demo

    with caplog.at_level(logging.DEBUG):
        running = RunningHost(lambda: importlib.import_module("function_app").app, tmp_path, function_key=KEY)
        try:
            replies = replay_demo(running, key=KEY)
        finally:
            running.stop()

    assert len(replies) >= 10
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "turn " in logged and "outcome=completed" in logged  # the logs were captured
    for secret in (KEY, connection, "c2VjcmV0LWFjY291bnQta2V5"):
        assert secret not in logged
    info_and_up = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    for prompt in ("My name is Ada and my favourite color is teal", "What is my favourite color?"):
        assert prompt not in info_and_up


def test_limits_are_enforced(tmp_path: Path) -> None:
    settings = HostSettings(max_message_bytes=100, max_wait_seconds=5)
    running = RunningHost(lambda: build_app(make_agent(ScriptedChatClient()), settings=settings), tmp_path)
    base = "/api/agents/assistant/conversations/c1/turns"
    try:
        too_long = running.request("POST", base, {"message": "x" * 101})
        just_right = running.request("POST", base, {"message": "x" * 100})
        too_long_wait = running.request("POST", base, {"message": "hi", "timeoutSeconds": 6})
        huge_body = running.request("POST", base, raw=b"x" * (10 * 1024 * 1024), headers={"Content-Type": "text/plain"})
        approvals = [{"id": f"a{i}", "approved": True} for i in range(33)]
        too_many = running.request("POST", base, {"approvals": approvals})
    finally:
        running.stop()

    assert too_long.status == 413 and too_long.json()["error"]["code"] == "message_too_large"
    assert just_right.status == 200
    assert too_long_wait.status == 400 and too_long_wait.json()["error"]["code"] == "invalid_timeout"
    assert huge_body.status == 413
    assert too_many.status == 400 and too_many.json()["error"]["code"] == "too_many_approvals"
