"""The inspector's views on the in-memory app (`front_doors`): its page, what the app hosts, and what it shows of a
conversation (compaction, receipts, sizes, a deletion, a failed turn) and of requests it cannot answer. Whether the
routes exist, their key and a workflow's runs are the local host's (tests/inspector/test_inspector_routes.py)."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from front_doors import MemoryFunctionApp
from inspector.inspector_apps import inspector_app

TURNS = "/api/agents/assistant/conversations/c1/turns"


@pytest.fixture
def host() -> MemoryFunctionApp:
    app = inspector_app(app_class=MemoryFunctionApp)
    assert isinstance(app, MemoryFunctionApp)
    return app


def talk(host: MemoryFunctionApp, *messages: str) -> None:
    for message in messages:
        reply = host.request("POST", TURNS, {"message": message})
        assert reply.status == 200, reply.body


def test_the_page_is_one_document_that_may_load_nothing_but_itself(host: MemoryFunctionApp) -> None:
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


def test_app_names_the_hosted_agents_and_workflows(host: MemoryFunctionApp) -> None:
    reply = host.request("GET", "/api/inspector/app")

    assert reply.json() == {
        "agents": [{"name": "assistant", "history": "durable"}, {"name": "broken", "history": "durable"}],
        "workflows": [{"name": "review"}, {"name": "cleanup"}, {"name": "shout"}],
    }


def test_the_conversation_shows_what_compaction_excluded_and_the_summary_that_replaced_it(
    host: MemoryFunctionApp,
) -> None:
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


def test_the_turn_records_are_the_conversations_receipts_oldest_first(host: MemoryFunctionApp) -> None:
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


def test_the_sizes_add_up_to_the_stored_state_and_the_budget_lines_follow_the_retention(
    host: MemoryFunctionApp,
) -> None:
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
def test_what_the_inspector_cannot_show_it_says_why(host: MemoryFunctionApp, path: str, status: int, code: str) -> None:
    reply = host.request("GET", path)

    assert (reply.status, reply.json()["error"]["code"]) == (status, code)


def test_a_deleted_conversation_reads_as_deleted(host: MemoryFunctionApp) -> None:
    talk(host, "My name is Ada.", "What is my name?")
    host.request("DELETE", "/api/agents/assistant/conversations/c1")

    reply = host.request("GET", "/api/inspector/agents/assistant/conversations/c1")

    # The tombstone is what the host holds: shown as such, where an id that never existed is 404.
    assert reply.status == 200
    assert reply.json()["conversationId"] == "c1"
    assert reply.json()["deleted"]["removedTurns"] == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", reply.json()["deleted"]["deletedAt"])
    assert "messages" not in reply.json()


def test_a_failed_turns_receipt_keeps_what_it_was_sent(host: MemoryFunctionApp) -> None:
    sent = "Please help. " * 100  # 1300 characters: the receipt keeps 1000
    failed = host.request("POST", "/api/agents/broken/conversations/f1/turns", {"message": sent})
    bundle = host.request("GET", "/api/inspector/agents/broken/conversations/f1").json()

    (turn,) = bundle["turns"]
    assert failed.status == 502 and turn["status"] == "failed"
    assert turn["error"] == failed.json()["error"]
    assert turn["input"] == {"message": sent[:999] + "…"}
    assert bundle["messages"] == []  # nothing of the failed turn is in the transcript
