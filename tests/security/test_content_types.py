"""The app's routes take the media types they document, on any host: JSON routes take JSON, turns JSON or text.

These rules are the app's own (its routes answer 415), so they hold on Azure as under `serve`. A body sent without a
Content-Type is read as the route's JSON (turns: JSON when it starts with `{`, else text). The published host's
routes (`/run`, `/workflow/{name}/run`) keep reading any other body as text, as that host does (its samples post
with `curl -d`, a form type).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hosting import RunningHost
from inspector.inspector_apps import inspector_app

CONVERSATION = "/api/agents/assistant/conversations/c1"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
TEXT = {"Content-Type": "text/plain"}
JSON_UTF8 = {"Content-Type": "application/json; charset=utf-8"}
RETENTION = json.dumps({"mode": "keep_all", "maxStateBytes": 65536}).encode()
CURL_HINT = "curl -d sends it unless told otherwise: add -H 'Content-Type: application/json'."


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHost]:
    host = RunningHost(lambda: inspector_app(None), tmp_path_factory.mktemp("content-types"))
    yield host
    host.stop()


def error(reply) -> dict[str, str]:
    return reply.json()["error"]


def test_a_form_body_is_refused_on_the_routes_that_take_json_and_says_what_curl_sent(running: RunningHost) -> None:
    turn = running.request("POST", f"{CONVERSATION}/turns", raw=b"message=hi", headers=FORM)
    retention = running.request("PUT", f"{CONVERSATION}/retention", raw=b"mode=keep_all", headers=FORM)
    run = running.request("POST", "/api/workflows/shout/runs", raw=b"input=hi", headers=FORM)

    for reply in (turn, retention, run):
        assert reply.status == 415
        assert error(reply)["code"] == "unsupported_media_type"
        assert error(reply)["message"].startswith("Content type 'application/x-www-form-urlencoded' is not supported")
        assert error(reply)["message"].endswith(CURL_HINT)
    assert running.request("GET", CONVERSATION).status == 404


def test_plain_text_is_refused_where_the_route_takes_json_only(running: RunningHost) -> None:
    retention = running.request("PUT", "/api/agents/assistant/conversations/t1/retention", raw=RETENTION, headers=TEXT)
    run = running.request("POST", "/api/workflows/shout/runs", raw=b'{"input": "hi"}', headers=TEXT)

    assert (retention.status, error(retention)["code"]) == (415, "unsupported_media_type")
    assert error(run) == {
        "code": "unsupported_media_type",
        "message": "Content type 'text/plain' is not supported; send application/json "
        '({"input": <the start executor\'s input>, "wait": boolean, "timeoutSeconds": number}).',
    }


def test_json_with_a_charset_and_json_without_a_content_type_are_read(running: RunningHost) -> None:
    turns = "/api/agents/assistant/conversations/j1/turns"
    first = running.request("POST", turns, raw=b'{"message": "My name is Ada."}', headers=JSON_UTF8)
    untyped = running.request("POST", turns, raw=b'{"message": "What is my name?"}')
    retention = running.request("PUT", "/api/agents/assistant/conversations/j1/retention", raw=RETENTION)
    upper = {"Content-Type": "application/json; charset=UTF-8"}
    run = running.request("POST", "/api/workflows/shout/runs", raw=b'{"input": "hi", "wait": true}', headers=upper)

    assert first.status == 200
    assert untyped.json()["text"] == "[offline model] Your name is Ada."
    assert retention.status == 200 and retention.json()["retention"]["mode"] == "keep_all"
    assert run.json()["outputs"] == ["HI"]


def test_the_published_hosts_run_route_reads_a_curl_d_body_as_the_message(running: RunningHost) -> None:
    reply = running.request("POST", "/api/agents/assistant/run?session_id=r1", raw=b"My name is Grace.", headers=FORM)
    messages = running.request("GET", "/api/agents/assistant/conversations/r1/messages").json()

    assert reply.status == 200
    assert messages["messages"][0]["text"] == "My name is Grace."
