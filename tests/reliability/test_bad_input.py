"""Hostile and malformed requests on every route: a 4xx with an exact error code, never a 5xx, nothing stored.

Each case runs against the local host with the offline model and compares every stored entity row and every queued
signal before and after the request, so a refused request that still signalled or wrote anything fails.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from agent_framework import tool
from apps import build_app, make_agent
from hosting import Reply, RunningHost
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent_host import HostSettings, OfflineChatClient

AGENT = "assistant"
BASE = f"/api/agents/{AGENT}/conversations"
SEEDED = "seeded"
ASKING = "asking"
LIMIT = 32 * 1024
JSON = {"Content-Type": "application/json"}
TEXT = {"Content-Type": "text/plain"}
OLD_TURN_ID = "00000000001deadbeef"


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"Refunded {order_id}."


def offline_app() -> Any:
    return build_app(make_agent(OfflineChatClient(), tools=[refund]), settings=HostSettings(max_message_bytes=LIMIT))


@dataclass(frozen=True)
class Seeded:
    """The running host and what the seeding turns left behind."""

    running: RunningHost
    turn_id: str
    pending_approval: str


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    running = RunningHost(offline_app, tmp_path_factory.mktemp("bad-input"))
    try:
        first = running.request("POST", f"{BASE}/{SEEDED}/turns", {"message": "My name is Ada."})
        running.request("POST", f"{BASE}/{SEEDED}/turns", {"message": "What is my name?"})
        asked = running.request("POST", f"{BASE}/{ASKING}/turns", {"message": "please refund order_id=A17"})
        assert first.status == 200 and asked.status == 200, (first.body, asked.body)
        pending = asked.json()["approvalRequests"][0]["id"]
        yield Seeded(running, first.json()["turnId"], pending)
    finally:
        running.stop()


def stored_rows(running: RunningHost) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str, str | None]]]:
    """Every entity state and every queued signal, read through a second SQLite connection."""
    assert running.host is not None
    running.wait_idle()
    connection = sqlite3.connect(running.host.store.path)
    try:
        entities = connection.execute("SELECT name, key, state FROM entities ORDER BY name, key").fetchall()
        signals = connection.execute("SELECT name, key, operation, input FROM signals ORDER BY seq").fetchall()
    finally:
        connection.close()
    return entities, signals


def assert_error_body(reply: Reply) -> dict[str, Any]:
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    body = reply.json()
    error = body["error"]
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    return error


@dataclass(frozen=True)
class Case:
    """One bad request and the exact answer it must get."""

    method: str
    path: str
    status: int
    code: str
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode()


TURNS = f"{BASE}/{SEEDED}/turns"
NEW_TURNS = f"{BASE}/fresh/turns"
RUN = f"/api/agents/{AGENT}/run"
RETENTION = f"{BASE}/{SEEDED}/retention"
LONG_ID = "a" * 129
HELLO = as_json({"message": "hello"})
DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than Python's recursion limit: json.loads raises RecursionError

CASES: dict[str, Case] = {
    # -- health
    "health POST": Case("POST", "/api/health", 405, "method_not_allowed"),
    "health DELETE": Case("DELETE", "/api/health", 405, "method_not_allowed"),
    # -- POST turns: JSON syntax
    "truncated JSON": Case("POST", TURNS, 400, "invalid_json", b'{"message": "hel', JSON),
    "JSON without quotes": Case("POST", TURNS, 400, "invalid_json", b"{message: hello}", JSON),
    "empty JSON body": Case("POST", TURNS, 400, "invalid_json", b"", JSON),
    "JSON array": Case("POST", TURNS, 400, "invalid_json", b'["hello"]', JSON),
    "JSON string": Case("POST", TURNS, 400, "invalid_json", b'"hello"', JSON),
    "JSON null": Case("POST", TURNS, 400, "invalid_json", b"null", JSON),
    "deeply nested JSON": Case("POST", TURNS, 400, "invalid_json", DEEP, JSON),
    "deeply nested message": Case("POST", TURNS, 400, "invalid_json", b'{"message": ' + DEEP + b"}", JSON),
    "trailing garbage": Case("POST", TURNS, 400, "invalid_json", b'{"message": "hi"} x', JSON),
    # -- POST turns: wrong types and missing or empty messages
    "message number": Case("POST", NEW_TURNS, 400, "invalid_body", as_json({"message": 42}), JSON),
    "message list": Case("POST", NEW_TURNS, 400, "invalid_body", as_json({"message": ["hi"]}), JSON),
    "message object": Case("POST", NEW_TURNS, 400, "invalid_body", as_json({"message": {"text": "hi"}}), JSON),
    "message bool": Case("POST", NEW_TURNS, 400, "invalid_body", as_json({"message": True}), JSON),
    "message null": Case("POST", NEW_TURNS, 400, "missing_message", as_json({"message": None}), JSON),
    "no message": Case("POST", NEW_TURNS, 400, "missing_message", as_json({"wait": True}), JSON),
    "empty object": Case("POST", NEW_TURNS, 400, "missing_message", b"{}", JSON),
    "empty message": Case("POST", NEW_TURNS, 400, "missing_message", as_json({"message": ""}), JSON),
    "whitespace message": Case("POST", TURNS, 400, "missing_message", as_json({"message": " \n\t "}), JSON),
    "empty text/plain": Case("POST", TURNS, 400, "missing_message", b"", TEXT),
    "whitespace text/plain": Case("POST", TURNS, 400, "missing_message", b"  \r\n ", TEXT),
    "lone surrogate": Case("POST", TURNS, 400, "invalid_body", b'{"message": "hi \\ud800"}', JSON),
    "field named by a lone surrogate": Case(
        "POST", TURNS, 400, "invalid_body", b'{"message": "hi", "\\udc80": 1}', JSON
    ),
    "unknown field": Case("POST", TURNS, 400, "invalid_body", as_json({"message": "hi", "temperature": 2}), JSON),
    "wait as string": Case("POST", TURNS, 400, "invalid_body", as_json({"message": "hi", "wait": "yes"}), JSON),
    "approvals not a list": Case("POST", TURNS, 400, "invalid_body", as_json({"approvals": "yes"}), JSON),
    "approval without verdict": Case("POST", TURNS, 400, "invalid_body", as_json({"approvals": [{"id": "x"}]}), JSON),
    # -- POST turns: sizes, encodings, media types
    "message over the limit": Case(
        "POST", TURNS, 413, "message_too_large", as_json({"message": "x" * (LIMIT + 1)}), JSON
    ),
    "multi-byte message over the limit": Case(
        "POST", TURNS, 413, "message_too_large", json.dumps({"message": "é" * (LIMIT // 2 + 1)}).encode(), JSON
    ),
    "text/plain over the limit": Case("POST", TURNS, 413, "message_too_large", b"y" * (LIMIT + 1), TEXT),
    "10 MB body": Case("POST", TURNS, 413, "message_too_large", b'{"message": "' + b"z" * 10_000_000 + b'"}', JSON),
    "invalid UTF-8 JSON": Case("POST", TURNS, 400, "invalid_encoding", b'{"message": "caf\xe9"}', JSON),
    "invalid UTF-8 text": Case("POST", TURNS, 400, "invalid_encoding", b"caf\xe9 \xff\xfe", TEXT),
    "XML body": Case(
        "POST", TURNS, 415, "unsupported_media_type", b"<message>hi</message>", {"Content-Type": "application/xml"}
    ),
    "form body": Case(
        "POST",
        TURNS,
        415,
        "unsupported_media_type",
        b"message=hi",
        {"Content-Type": "application/x-www-form-urlencoded"},
    ),
    "multipart body": Case(
        "POST", TURNS, 415, "unsupported_media_type", HELLO, {"Content-Type": "multipart/form-data; boundary=x"}
    ),
    "octet stream": Case(
        "POST", TURNS, 415, "unsupported_media_type", HELLO, {"Content-Type": "application/octet-stream"}
    ),
    # -- POST turns: timeouts in the body and the query
    "timeout as string": Case(
        "POST", TURNS, 400, "invalid_body", as_json({"message": "hi", "timeoutSeconds": "10"}), JSON
    ),
    "timeout as bool": Case(
        "POST", TURNS, 400, "invalid_body", as_json({"message": "hi", "timeoutSeconds": True}), JSON
    ),
    "negative timeout": Case(
        "POST", TURNS, 400, "invalid_timeout", as_json({"message": "hi", "timeoutSeconds": -1}), JSON
    ),
    "zero timeout": Case("POST", TURNS, 400, "invalid_timeout", as_json({"message": "hi", "timeoutSeconds": 0}), JSON),
    "huge timeout": Case(
        "POST", TURNS, 400, "invalid_timeout", as_json({"message": "hi", "timeoutSeconds": 1e9}), JSON
    ),
    "NaN timeout": Case("POST", TURNS, 400, "invalid_timeout", b'{"message": "hi", "timeoutSeconds": NaN}', JSON),
    "query timeout not a number": Case("POST", f"{TURNS}?timeoutSeconds=soon", 400, "invalid_timeout", b"hi", TEXT),
    "query timeout negative": Case("POST", f"{TURNS}?timeoutSeconds=-5", 400, "invalid_timeout", b"hi", TEXT),
    "query timeout infinite": Case("POST", f"{TURNS}?timeoutSeconds=inf", 400, "invalid_timeout", b"hi", TEXT),
    "query wait not a flag": Case("POST", f"{TURNS}?wait=maybe", 400, "invalid_query", b"hi", TEXT),
    # -- POST turns: approvals
    "approval for an unknown request": Case(
        "POST",
        f"{BASE}/{ASKING}/turns",
        400,
        "unknown_approval",
        as_json({"approvals": [{"id": "nope", "approved": True}]}),
        JSON,
    ),
    "approval where nothing is pending": Case(
        "POST", TURNS, 400, "unknown_approval", as_json({"approvals": [{"id": "af-1", "approved": False}]}), JSON
    ),
    "too many approvals": Case(
        "POST",
        TURNS,
        400,
        "too_many_approvals",
        as_json({"approvals": [{"id": f"a{i}", "approved": True} for i in range(33)]}),
        JSON,
    ),
    # -- POST turns: Idempotency-Key
    "idempotency key with a space": Case(
        "POST", TURNS, 400, "invalid_idempotency_key", HELLO, {**JSON, "Idempotency-Key": "two words"}
    ),
    "idempotency key too long": Case(
        "POST", TURNS, 400, "invalid_idempotency_key", HELLO, {**JSON, "Idempotency-Key": "k" * 256}
    ),
    "empty idempotency key": Case(
        "POST", TURNS, 400, "invalid_idempotency_key", HELLO, {**JSON, "Idempotency-Key": ""}
    ),
    # -- POST turns: agents and conversation ids
    "unknown agent": Case("POST", "/api/agents/nobody/conversations/c1/turns", 404, "agent_not_found", HELLO, JSON),
    "agent name with a slash": Case(
        "POST", "/api/agents/assist%2Fant/conversations/c1/turns", 404, "agent_not_found", HELLO, JSON
    ),
    "id with an encoded slash": Case("POST", f"{BASE}/a%2Fb/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with a raw slash": Case("POST", f"{BASE}/a/b/turns", 404, "not_found", HELLO, JSON),
    "id of raw dots": Case("POST", f"{BASE}/../turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id of a single dot": Case("POST", f"{BASE}/./turns", 400, "invalid_conversation_id", HELLO, JSON),
    "empty id": Case("POST", f"{BASE}//turns", 404, "not_found", HELLO, JSON),
    "path climbing to another agent": Case(
        "POST", "/api/agents/nobody/../assistant/conversations/c1/turns", 404, "not_found", HELLO, JSON
    ),
    "id of encoded dots": Case("POST", f"{BASE}/%2E%2E/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id containing dot-dot": Case("POST", f"{BASE}/a..b/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id of an encoded parent path": Case(
        "POST", f"{BASE}/..%2Fother/turns", 400, "invalid_conversation_id", HELLO, JSON
    ),
    "id starting with a dot": Case("POST", f"{BASE}/.hidden/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id starting with a dash": Case("POST", f"{BASE}/-x/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with an at sign": Case("POST", f"{BASE}/user@example/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with a space": Case("POST", f"{BASE}/two%20words/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with a NUL": Case("POST", f"{BASE}/a%00b/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with a newline": Case("POST", f"{BASE}/a%0Ab/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with non-ASCII": Case("POST", f"{BASE}/{quote('café')}/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id over 128 characters": Case("POST", f"{BASE}/{LONG_ID}/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "id with an invalid escape": Case("POST", f"{BASE}/%ff%fe/turns", 400, "invalid_conversation_id", HELLO, JSON),
    "GET on turns": Case("GET", TURNS, 405, "method_not_allowed"),
    "PUT on turns": Case("PUT", TURNS, 405, "method_not_allowed", HELLO, JSON),
    # -- GET turn
    "malformed turn id": Case("GET", f"{TURNS}/not.a.turn", 400, "invalid_turn_id"),
    "turn id over 64 characters": Case("GET", f"{TURNS}/{'a' * 65}", 400, "invalid_turn_id"),
    "turn id with an encoded slash": Case("GET", f"{TURNS}/a%2Fb", 400, "invalid_turn_id"),
    "unknown turn": Case("GET", f"{TURNS}/{OLD_TURN_ID}", 404, "turn_not_found"),
    "turn of an unknown agent": Case(
        "GET", f"/api/agents/nobody/conversations/c1/turns/{OLD_TURN_ID}", 404, "agent_not_found"
    ),
    "turn of an invalid conversation id": Case(
        "GET", f"{BASE}/a@b/turns/{OLD_TURN_ID}", 400, "invalid_conversation_id"
    ),
    "POST on a turn": Case("POST", f"{TURNS}/{OLD_TURN_ID}", 405, "method_not_allowed", HELLO, JSON),
    "DELETE on a turn": Case("DELETE", f"{TURNS}/{OLD_TURN_ID}", 405, "method_not_allowed"),
    # -- GET and DELETE conversation
    "unknown conversation": Case("GET", f"{BASE}/never-seen", 404, "conversation_not_found"),
    "delete an unknown conversation": Case("DELETE", f"{BASE}/never-seen", 404, "conversation_not_found"),
    "delete with an encoded slash": Case("DELETE", f"{BASE}/{SEEDED}%2F..", 400, "invalid_conversation_id"),
    "delete with dot-dot": Case("DELETE", f"{BASE}/{SEEDED}..", 400, "invalid_conversation_id"),
    "delete of an unknown agent": Case("DELETE", f"/api/agents/nobody/conversations/{SEEDED}", 404, "agent_not_found"),
    "conversation id over 128 characters": Case("GET", f"{BASE}/{LONG_ID}", 400, "invalid_conversation_id"),
    "PUT on a conversation": Case("PUT", f"{BASE}/{SEEDED}", 405, "method_not_allowed", HELLO, JSON),
    "POST on a conversation": Case("POST", f"{BASE}/{SEEDED}", 405, "method_not_allowed", HELLO, JSON),
    "PATCH on a conversation": Case("PATCH", f"{BASE}/{SEEDED}", 405, "method_not_allowed", HELLO, JSON),
    # -- GET messages
    "messages flag not a flag": Case("GET", f"{BASE}/{SEEDED}/messages?includeExcluded=maybe", 400, "invalid_query"),
    "messages of an unknown conversation": Case("GET", f"{BASE}/never-seen/messages", 404, "conversation_not_found"),
    "messages with a control character": Case("GET", f"{BASE}/a%1Bb/messages", 400, "invalid_conversation_id"),
    "DELETE on messages": Case("DELETE", f"{BASE}/{SEEDED}/messages", 405, "method_not_allowed"),
    # -- PUT retention
    "retention mode unknown": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "forever", "maxStateBytes": 65536}), JSON
    ),
    "retention budget too small": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "auto", "maxStateBytes": 100}), JSON
    ),
    "retention budget over the ceiling": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "auto", "maxStateBytes": 10**12}), JSON
    ),
    "retention budget negative": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "auto", "maxStateBytes": -1}), JSON
    ),
    "retention budget a string": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "auto", "maxStateBytes": "1MB"}), JSON
    ),
    "retention budget fractional": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "auto", "maxStateBytes": 65536.5}), JSON
    ),
    "retention watermarks inverted": Case(
        "PUT",
        RETENTION,
        400,
        "invalid_retention",
        as_json({"mode": "auto", "maxStateBytes": 65536, "highWatermark": 0.5, "lowWatermark": 0.8}),
        JSON,
    ),
    "retention watermark over one": Case(
        "PUT",
        RETENTION,
        400,
        "invalid_retention",
        as_json({"mode": "auto", "maxStateBytes": 65536, "highWatermark": 1.5}),
        JSON,
    ),
    "retention unknown field": Case(
        "PUT", RETENTION, 400, "invalid_retention", as_json({"mode": "auto", "maxStateBytes": 65536, "ttl": 5}), JSON
    ),
    "retention body an array": Case("PUT", RETENTION, 400, "invalid_json", b"[]", JSON),
    "retention empty body": Case("PUT", RETENTION, 400, "invalid_json", b"", JSON),
    "retention deeply nested JSON": Case("PUT", RETENTION, 400, "invalid_json", DEEP, JSON),
    "retention truncated JSON": Case("PUT", RETENTION, 400, "invalid_json", b'{"mode": "au', JSON),
    "retention invalid UTF-8": Case("PUT", RETENTION, 400, "invalid_encoding", b'{"mode": "\xff"}', JSON),
    "retention field named by a lone surrogate": Case(
        "PUT", RETENTION, 400, "invalid_body", b'{"mode": "auto", "maxStateBytes": 65536, "\\udc80": 1}', JSON
    ),
    "retention sent as text": Case(
        "PUT", RETENTION, 415, "unsupported_media_type", as_json({"mode": "auto", "maxStateBytes": 65536}), TEXT
    ),
    "retention of an invalid id": Case(
        "PUT",
        f"{BASE}/a%2F..%2Fb/retention",
        400,
        "invalid_conversation_id",
        as_json({"mode": "auto", "maxStateBytes": 65536}),
        JSON,
    ),
    "GET on retention": Case("GET", RETENTION, 405, "method_not_allowed"),
    # -- POST run (the agent-framework-azurefunctions shape)
    "run truncated JSON": Case("POST", RUN, 400, "invalid_json", b'{"message": ', JSON),
    "run deeply nested JSON": Case("POST", RUN, 400, "invalid_json", DEEP, JSON),
    "run JSON array": Case("POST", RUN, 400, "invalid_json", b'["hi"]', JSON),
    "run message number": Case("POST", RUN, 400, "invalid_body", as_json({"message": 7, "session_id": SEEDED}), JSON),
    "run message missing": Case("POST", RUN, 400, "missing_message", as_json({"session_id": SEEDED}), JSON),
    "run message whitespace": Case(
        "POST", RUN, 400, "missing_message", as_json({"message": "  ", "session_id": SEEDED}), JSON
    ),
    "run message over the limit": Case(
        "POST", RUN, 413, "message_too_large", as_json({"message": "x" * (LIMIT + 1), "session_id": SEEDED}), JSON
    ),
    "run lone surrogate": Case(
        "POST", RUN, 400, "invalid_body", b'{"message": "\\udfff", "session_id": "seeded"}', JSON
    ),
    "run invalid UTF-8": Case("POST", f"{RUN}?session_id={SEEDED}", 400, "invalid_encoding", b"\xc3\x28", TEXT),
    "run session id with a slash": Case(
        "POST", RUN, 400, "invalid_conversation_id", as_json({"message": "hi", "session_id": "a/b"}), JSON
    ),
    "run session id over 128": Case("POST", f"{RUN}?session_id={LONG_ID}", 400, "invalid_conversation_id", b"hi", TEXT),
    "run thread id with dot-dot": Case("POST", f"{RUN}?thread_id=..", 400, "invalid_conversation_id", b"hi", TEXT),
    "run conflicting session ids": Case(
        "POST",
        f"{RUN}?session_id=other",
        400,
        "conflicting_session_id",
        as_json({"message": "hi", "session_id": SEEDED}),
        JSON,
    ),
    "run unknown agent": Case("POST", "/api/agents/nobody/run", 404, "agent_not_found", HELLO, JSON),
    "GET on run": Case("GET", RUN, 405, "method_not_allowed"),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_request_is_refused_with_its_code_and_changes_nothing(seeded: Seeded, case: Case) -> None:
    running = seeded.running
    before = stored_rows(running)

    reply = running.request(case.method, case.path, headers=case.headers, raw=case.body)

    assert (reply.status, assert_error_body(reply)["code"]) == (case.status, case.code), reply.body[:300]
    assert stored_rows(running) == before


def test_there_are_at_least_forty_cases_covering_every_route() -> None:
    routes = {
        "health": "/api/health",
        "turns": "/turns",
        "turn": f"/turns/{OLD_TURN_ID}",
        "messages": "/messages",
        "retention": "/retention",
        "run": "/run",
    }
    covered = {name for name, marker in routes.items() for case in CASES.values() if marker in case.path}

    assert len(CASES) >= 40
    assert covered == set(routes)
    assert {"GET", "DELETE"} <= {case.method for case in CASES.values() if case.path.startswith(f"{BASE}/never-seen")}


def test_seeded_conversation_still_answers_after_every_bad_request(seeded: Seeded) -> None:
    # Runs after the table (file order): the hostile requests left both conversations readable and working.
    running = seeded.running

    reply = running.request("POST", f"{BASE}/{SEEDED}/turns", {"message": "What is my name?"})
    approved = running.request(
        "POST", f"{BASE}/{ASKING}/turns", {"approvals": [{"id": seeded.pending_approval, "approved": True}]}
    )

    assert reply.status == 200 and reply.json()["text"] == "[offline model] Your name is Ada."
    assert approved.status == 200 and approved.json()["text"] == "[offline model] The tool returned: Refunded A17."


# -- property: random bodies, content types and ids on the turn route ---------------------------------------------

_TRICKY_JSON = st.sampled_from(
    [
        '{"message": "\\ud800"}',
        '{"message": "\\u0000"}',
        '{"message": 1e999}',
        '{"message": "hi", "timeoutSeconds": -Infinity}',
        '{"message": "hi", "timeoutSeconds": 1e-320}',
        '{"message": "hi", "approvals": [{"id": "x", "approved": true}]}',
        '{"message": "hi", "approvals": null}',
        '{"approvals": []}',
        '{"message": "hi", "message": 5}',
        "[" * 5000,
        '{"message": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"message": "' + "\\\\" * 2000 + '"}',
    ]
)
_JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
# Two levels of nesting spelled out: st.recursive's check of its extend function misfires on some interpreters.
_JSON_CONTAINERS = st.lists(_JSON_SCALARS, max_size=4) | st.dictionaries(
    st.text(max_size=12), _JSON_SCALARS, max_size=4
)
_JSON_VALUES = (
    _JSON_SCALARS
    | _JSON_CONTAINERS
    | st.lists(_JSON_CONTAINERS, max_size=3)
    | st.dictionaries(st.text(max_size=12), _JSON_CONTAINERS, max_size=3)
)
_TURN_OBJECTS = st.fixed_dictionaries(
    {},
    optional={
        "message": _JSON_VALUES,
        "wait": st.booleans() | _JSON_VALUES,
        "timeoutSeconds": st.floats(min_value=-5, max_value=500) | _JSON_VALUES,
        "approvals": _JSON_VALUES,
        "extra": _JSON_VALUES,
    },
).map(lambda body: json.dumps({"wait": False, **body}))
_VALID_TURNS = st.builds(
    lambda message, wait: json.dumps({"message": message, "wait": wait, "timeoutSeconds": 10}),
    st.text(min_size=1, max_size=60).filter(str.strip),
    st.booleans(),
)
_BODIES = st.one_of(
    _VALID_TURNS.map(str.encode),  # well-formed turns, so ids, types and keys are judged on bodies that would run
    st.binary(max_size=300),
    st.text(max_size=200).map(str.encode),
    _TURN_OBJECTS.map(str.encode),
    _TRICKY_JSON.map(str.encode),
)
_CONTENT_TYPES = st.one_of(
    st.sampled_from(
        [
            None,
            "application/json",
            "application/json; charset=utf-8",
            "application/problem+json",
            "text/plain",
            "text/plain; charset=latin-1",
            "TEXT/PLAIN",
            "application/xml",
            "multipart/form-data",
            "",
        ]
    ),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=30),
)
_KEYS = st.one_of(
    st.none(),
    st.sampled_from(["retry-1", "retry-2"]),  # reused across examples: same body replays, another body conflicts
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300),
)
_IDS = st.one_of(
    st.sampled_from([SEEDED, ASKING, "p1", "..", ".", "a..b", "a/b", "con", "x" * 128, "x" * 129]),
    st.text(max_size=140),
)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=_BODIES,
    content_type=_CONTENT_TYPES,
    conversation_id=_IDS,
    encode_slash=st.booleans(),
    idempotency_key=_KEYS,
)
def test_random_turn_requests_never_fail_the_server_or_change_state_when_refused(
    seeded: Seeded,
    body: bytes,
    content_type: str | None,
    conversation_id: str,
    encode_slash: bool,
    idempotency_key: str | None,
) -> None:
    running = seeded.running
    before = stored_rows(running)
    path = f"{BASE}/{quote(conversation_id, safe='' if encode_slash else '/')}/turns"
    headers = {} if content_type is None else {"Content-Type": content_type}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key

    reply = running.request("POST", path, headers=headers, raw=body)

    event(f"HTTP {reply.status}")
    assert reply.status < 500, reply.body[:300]
    if reply.status in (200, 202):
        assert reply.json()["turnId"]
        return
    assert 400 <= reply.status < 500
    assert_error_body(reply)
    assert stored_rows(running) == before
