"""`POST .../turns` asks more of a turn than text: structured output, chat options, and images beside the text.

One in-memory app (`front_doors`) serves two agents: `planner` on the offline model (its structured answers fit the
schema) and `recorder` on a scripted model that keeps the options of every call and answers what it is told to.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from apps import make_agent
from chat_clients import EchoScript, ScriptedChatClient
from front_doors import MemoryFunctionApp, memory_app

from agent_host import HostSettings, OfflineChatClient

PLANNER = "/api/agents/planner/conversations"
RECORDER = "/api/agents/recorder/conversations"
TRIP = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city", "days"],
}
LIMIT = 4096


RECORDING = EchoScript()


def app() -> MemoryFunctionApp:
    planner = make_agent(OfflineChatClient(), "planner")
    recorder = make_agent(ScriptedChatClient(RECORDING), "recorder")
    return memory_app(planner, recorder, settings=HostSettings(max_message_bytes=LIMIT))


@pytest.fixture(scope="module")
def host() -> MemoryFunctionApp:
    return app()


def test_structured_output_answers_with_its_parsed_value_also_when_read_back(host: MemoryFunctionApp) -> None:
    body = {"message": "Plan 3 days in Oslo.", "responseFormat": TRIP}

    answer = host.request("POST", f"{PLANNER}/trip-1/turns", body)
    again = host.request("GET", urlsplit(answer.headers["location"]).path)

    assert answer.status == 200
    assert answer.json()["value"] == {"city": "[offline model] Plan 3 days in Oslo.", "days": 3}
    assert json.loads(answer.json()["text"]) == answer.json()["value"]
    assert again.status == 200 and again.json()["value"] == answer.json()["value"]


def test_a_turn_without_structured_output_has_no_value(host: MemoryFunctionApp) -> None:
    answer = host.request("POST", f"{PLANNER}/trip-2/turns", {"message": "Hello."})

    assert answer.status == 200 and "value" not in answer.json()


@pytest.mark.parametrize(
    ("response_format", "problem"),
    [
        ({"type": "objekt"}, "is not a valid JSON schema: 'objekt' is not valid under any of the given schemas"),
        ({"type": "json_schema", "json_schema": {"name": "trip"}}, 'the "json_schema" form needs'),
        ({"type": "json_schema", "json_schema": {"name": "a trip", "schema": TRIP}}, "json_schema.name must be"),
    ],
)
def test_an_invalid_schema_is_400_and_nothing_runs(host: MemoryFunctionApp, response_format: Any, problem: str) -> None:
    answer = host.request("POST", f"{PLANNER}/trip-3/turns", {"message": "Plan.", "responseFormat": response_format})
    conversation = host.request("GET", f"{PLANNER}/trip-3")

    assert answer.status == 400
    assert answer.json()["error"]["code"] == "invalid_response_format"
    assert problem in answer.json()["error"]["message"]
    assert conversation.status == 404


def test_an_answer_that_does_not_match_is_a_failed_turn_kept_in_history(host: MemoryFunctionApp) -> None:
    RECORDING.next_answer = '{"city": "Oslo"}'

    answer = host.request("POST", f"{RECORDER}/trip-4/turns", {"message": "Plan.", "responseFormat": TRIP})
    messages = host.request("GET", f"{RECORDER}/trip-4/messages").json()["messages"]

    assert answer.status == 502
    assert answer.json()["status"] == "failed"
    assert answer.json()["error"]["code"] == "invalid_structured_output"
    assert "the answer: 'days' is a required property" in answer.json()["error"]["message"]
    assert [message["text"] for message in messages] == ["Plan.", '{"city": "Oslo"}']


def test_chat_options_reach_the_model_under_cores_names(host: MemoryFunctionApp) -> None:
    options = {"temperature": 0.2, "maxTokens": 50, "topP": 0.9, "seed": 7, "toolChoice": "none"}

    answer = host.request("POST", f"{RECORDER}/opts-1/turns", {"message": "Hi.", "options": options})

    sent = RECORDING.sent[-1][1]
    assert answer.status == 200
    assert {name: sent.get(name) for name in ("temperature", "max_tokens", "top_p", "seed", "tool_choice")} == {
        "temperature": 0.2,
        "max_tokens": 50,
        "top_p": 0.9,
        "seed": 7,
        "tool_choice": "none",
    }


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"store": False}, "options store cannot be set per turn; the ones that can are temperature, maxTokens"),
        ({"temperature": 3}, "options.temperature must be from 0 to 2, got 3"),
        ({"maxTokens": 1.5}, "options.maxTokens must be a whole number from 1 to 1e+06, got 1.5"),
        ({"toolChoice": "sometimes"}, 'options.toolChoice must be "auto", "none", "required"'),
    ],
)
def test_options_off_the_allow_list_or_out_of_range_are_400(
    host: MemoryFunctionApp, options: dict[str, Any], problem: str
) -> None:
    answer = host.request("POST", f"{RECORDER}/opts-2/turns", {"message": "Hi.", "options": options})

    assert answer.status == 400
    assert answer.json()["error"]["code"] == "invalid_options"
    assert problem in answer.json()["error"]["message"]


def png_data_uri(size: int) -> str:
    return "data:image/png;base64," + base64.b64encode(b"\x89PNG" + bytes(size)).decode()


def test_contents_are_sent_and_stored_as_one_user_message(host: MemoryFunctionApp) -> None:
    image = png_data_uri(64)
    contents = [
        {"type": "text", "text": "What is in these pictures?"},
        {"type": "uri", "uri": "https://example.com/cat.png", "media_type": "image/png"},
        {"type": "data", "uri": image},
    ]

    answer = host.request("POST", f"{RECORDER}/pics-1/turns", {"contents": contents})
    stored = host.request("GET", f"{RECORDER}/pics-1/messages").json()["messages"][0]

    sent = RECORDING.sent[-1][0][-1]
    assert answer.status == 200 and answer.json()["text"] == "echo: What is in these pictures?"
    assert [(content.type, content.uri) for content in sent.contents] == [
        ("text", None),
        ("uri", "https://example.com/cat.png"),
        ("data", image),
    ]
    assert stored["role"] == "user" and stored["text"] == "What is in these pictures?"
    assert [(c["type"], c.get("uri"), c.get("media_type")) for c in stored["contents"]] == [
        ("text", None, None),
        ("uri", "https://example.com/cat.png", "image/png"),
        ("data", image, "image/png"),
    ]


@pytest.mark.parametrize(
    ("contents", "problem"),
    [
        ([], "contents must hold 1 to 16 contents, got 0"),
        ([{"type": "uri", "uri": "file:///etc/passwd", "media_type": "text/plain"}], "must be an http(s) URL"),
        ([{"type": "uri", "uri": "https://example.com/a.png"}], "contents[0].media_type must name the file's type"),
        ([{"type": "data", "uri": "data:image/png;base64,@@@"}], "must be a base64 data URI"),
        ([{"type": "function_call", "name": "refund"}], 'contents[0].type must be "text", "uri" or "data"'),
        ([{"type": "text", "text": "hi", "role": "system"}], "contents[0] (text) has unknown field(s) role"),
    ],
)
def test_malformed_contents_are_400_invalid_contents(
    host: MemoryFunctionApp, contents: list[Any], problem: str
) -> None:
    answer = host.request("POST", f"{RECORDER}/pics-2/turns", {"contents": contents})

    assert answer.status == 400
    assert answer.json()["error"]["code"] == "invalid_contents"
    assert problem in answer.json()["error"]["message"]


def test_message_and_contents_together_are_refused(host: MemoryFunctionApp) -> None:
    body = {"message": "Hi.", "contents": [{"type": "text", "text": "Hi."}]}

    answer = host.request("POST", f"{RECORDER}/pics-3/turns", body)

    assert answer.status == 400 and answer.json()["error"]["code"] == "invalid_contents"


def test_an_inline_image_over_the_message_limit_is_413(host: MemoryFunctionApp) -> None:
    contents = [{"type": "text", "text": "Look."}, {"type": "data", "uri": png_data_uri(LIMIT)}]

    answer = host.request("POST", f"{RECORDER}/pics-4/turns", {"contents": contents})

    assert answer.status == 413
    assert answer.json()["error"]["code"] == "message_too_large"
    assert host.request("GET", f"{RECORDER}/pics-4").status == 404


def test_a_retry_of_a_key_must_ask_for_the_same_structured_output(host: MemoryFunctionApp) -> None:
    headers = {"Idempotency-Key": "trip-key"}
    first = host.request(
        "POST", f"{PLANNER}/trip-5/turns", {"message": "Plan.", "responseFormat": TRIP}, headers=headers
    )
    retry = host.request(
        "POST", f"{PLANNER}/trip-5/turns", {"message": "Plan.", "responseFormat": TRIP}, headers=headers
    )
    other = host.request("POST", f"{PLANNER}/trip-5/turns", {"message": "Plan."}, headers=headers)

    assert (first.status, retry.status, other.status) == (200, 200, 409)
    assert retry.json()["turnId"] == first.json()["turnId"] and retry.json()["value"] == first.json()["value"]
    assert other.json()["error"]["code"] == "idempotency_key_reused"
