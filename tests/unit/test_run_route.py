"""The `/run` route's request: the shapes agent-framework-azurefunctions clients send, read as that host reads them."""

from __future__ import annotations

import json
import re
from typing import Any

import azure.functions as func
import pytest

from agent_host._errors import AgentHostError, InvalidRequestError, MessageTooLargeError
from agent_host._http.run_route import RunRequest, parse_run_request
from agent_host._settings import HostSettings

SETTINGS = HostSettings(max_message_bytes=100)
JSON = {"Content-Type": "application/json"}
TEXT = {"Content-Type": "text/plain; charset=utf-8"}
GENERATED_ID = re.compile(r"[0-9a-f]{32}")


def run_request(
    body: Any = b"", headers: dict[str, str] | None = None, params: dict[str, str] | None = None
) -> func.HttpRequest:
    """A POST to the route as the Functions worker hands it over; a non-bytes body is sent as JSON."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    return func.HttpRequest(
        "POST",
        "http://localhost:7071/api/agents/assistant/run",
        headers=headers or {},
        params=params or {},
        route_params={"agent": "assistant"},
        body=data,
    )


def parse(body: Any = b"", headers: dict[str, str] | None = None, params: dict[str, str] | None = None) -> RunRequest:
    return parse_run_request(run_request(body, headers, params), SETTINGS)


def refusal(body: Any = b"", headers: dict[str, str] | None = None, params: dict[str, str] | None = None) -> Any:
    with pytest.raises(AgentHostError) as caught:
        parse(body, headers, params)
    return caught.value


# --- Body shapes ---------------------------------------------------------------------------------------------------


def test_a_json_body_gives_message_session_and_a_json_answer() -> None:
    request = parse({"message": "My name is Ada.", "session_id": "s1"}, JSON)

    assert request == RunRequest(message="My name is Ada.", session_id="s1", wait=True, answer_json=True)


def test_a_plain_text_body_is_the_message_stripped_with_a_text_answer() -> None:
    request = parse(b"  My name is Ada.\n", TEXT, {"session_id": "s1"})

    assert request == RunRequest(message="My name is Ada.", session_id="s1", wait=True, answer_json=False)


def test_a_body_without_a_content_type_is_read_as_text() -> None:
    request = parse(b'{"message": "hi"}', {}, {"session_id": "s1"})

    assert request.message == '{"message": "hi"}'
    assert request.answer_json is False


def test_a_json_suffix_media_type_is_json() -> None:
    request = parse({"message": "hi", "session_id": "s1"}, {"Content-Type": "application/vnd.example+json"})

    assert (request.message, request.answer_json) == ("hi", True)


def test_unknown_json_fields_are_ignored_as_that_host_ignores_them() -> None:
    request = parse({"message": "hi", "session_id": "s1", "role": "user", "response_format": None}, JSON)

    assert (request.message, request.session_id) == ("hi", "s1")


@pytest.mark.parametrize("accept", ["application/json", "text/html, Application/JSON;q=0.9", " application/json "])
def test_accept_application_json_asks_for_a_json_answer_to_a_text_request(accept: str) -> None:
    assert parse(b"hi", {**TEXT, "Accept": accept}).answer_json is True


@pytest.mark.parametrize("accept", ["", "text/plain", "application/jsonx", "*/*"])
def test_other_accept_values_keep_a_text_answer_for_a_text_request(accept: str) -> None:
    assert parse(b"hi", {**TEXT, "Accept": accept}).answer_json is False


# --- Session ids ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "params"),
    [
        ({"message": "hi", "session_id": "s1"}, {}),
        ({"message": "hi", "thread_id": "s1"}, {}),
        ({"message": "hi"}, {"session_id": "s1"}),
        ({"message": "hi"}, {"thread_id": "s1"}),
        ({"message": "hi", "session_id": "s1", "thread_id": "s1"}, {"session_id": "s1", "thread_id": "s1"}),
    ],
    ids=["body session_id", "body thread_id", "query session_id", "query thread_id", "all four agree"],
)
def test_the_session_id_comes_from_session_id_or_legacy_thread_id_in_body_or_query(
    body: dict[str, Any], params: dict[str, str]
) -> None:
    assert parse(body, JSON, params).session_id == "s1"


def test_a_text_request_takes_its_session_from_the_query() -> None:
    assert parse(b"hi", TEXT, {"thread_id": "legacy-7"}).session_id == "legacy-7"


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_request_without_a_session_id_gets_a_new_one_each_time(blank: str) -> None:
    first = parse({"message": "hi", "session_id": blank}, JSON)
    second = parse(b"hi", TEXT, {"session_id": blank})

    assert GENERATED_ID.fullmatch(first.session_id) and GENERATED_ID.fullmatch(second.session_id)
    assert first.session_id != second.session_id


@pytest.mark.parametrize(
    ("body", "params", "listed"),
    [
        (
            {"message": "hi", "session_id": "s1", "thread_id": "s2"},
            {},
            "session_id in the body='s1', thread_id in the body='s2'",
        ),
        (
            {"message": "hi", "session_id": "s1"},
            {"session_id": "s2"},
            "session_id in the body='s1', session_id in the query='s2'",
        ),
        (
            {"message": "hi", "thread_id": "s1"},
            {"session_id": "s1", "thread_id": "s3"},
            "session_id in the query='s1', thread_id in the body='s1', thread_id in the query='s3'",
        ),
    ],
)
def test_conflicting_session_ids_are_refused_naming_each(
    body: dict[str, Any], params: dict[str, str], listed: str
) -> None:
    error = refusal(body, JSON, params)

    assert isinstance(error, InvalidRequestError)
    assert (error.code, error.status) == ("conflicting_session_id", 400)
    assert error.message == f"Conflicting session identifiers supplied: {listed}."


@pytest.mark.parametrize("session_id", ["bad id", "../other", "-s1", "s" * 129])
def test_an_invalid_session_id_is_invalid_conversation_id(session_id: str) -> None:
    body_error = refusal({"message": "hi", "session_id": session_id}, JSON)
    query_error = refusal(b"hi", TEXT, {"thread_id": session_id})

    assert body_error.code == query_error.code == "invalid_conversation_id"
    assert repr(session_id)[:20] in body_error.message


def test_a_session_id_of_the_wrong_type_is_invalid_body() -> None:
    error = refusal({"message": "hi", "session_id": 5}, JSON)

    assert error.code == "invalid_body"
    assert "session_id: Input should be a valid string (got 5)" in error.message


# --- Waiting -------------------------------------------------------------------------------------------------------


def waits(
    header: str | None = None,
    query: str | None = None,
    body: Any = None,
    *,
    header_name: str = "x-ms-wait-for-response",
) -> bool:
    fields: dict[str, Any] = {"message": "hi", "session_id": "s1"}
    if body is not None:
        fields["wait_for_response"] = body
    headers = {**JSON, **({header_name: header} if header is not None else {})}
    params = {"wait_for_response": query} if query is not None else {}
    return parse(fields, headers, params).wait


def test_waiting_is_the_default() -> None:
    assert waits() is True


def test_the_header_wins_over_query_and_body() -> None:
    assert waits(header="false", query="true", body=True) is False
    assert waits(header="true", query="false", body=False) is True


def test_the_query_wins_over_the_body() -> None:
    assert waits(query="no", body=True) is False
    assert waits(query="yes", body=False) is True


def test_the_body_decides_when_header_and_query_are_absent() -> None:
    assert waits(body=False) is False
    assert waits(body="off") is False
    assert waits(body="ON") is True


def test_an_unreadable_value_falls_through_to_the_next_source() -> None:
    assert waits(header="perhaps", query="false", body=True) is False
    assert waits(header="perhaps", query="later", body=False) is False
    assert waits(header="", query="", body="maybe") is True
    assert waits(body=[False]) is True  # neither a boolean, a number nor a word


@pytest.mark.parametrize(("number", "expected"), [(0, False), (1, True), (0.0, False), (2.5, True)])
def test_a_number_reads_as_that_host_reads_it(number: float, expected: bool) -> None:
    assert waits(body=number) is expected


@pytest.mark.parametrize(("word", "expected"), [("1", True), ("y", True), (" No ", False), ("0", False), ("n", False)])
def test_wait_words_read_as_that_host_reads_them(word: str, expected: bool) -> None:
    assert waits(query=word) is expected


def test_the_wait_header_name_is_case_insensitive() -> None:
    assert waits(header="false", body=True, header_name="X-MS-Wait-For-Response") is False


# --- The message ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"message": ""}, JSON),
        ({"message": "  \n "}, JSON),
        ({"session_id": "s1"}, JSON),
        ({}, JSON),
        (b"", JSON),
        (b"", TEXT),
        (b" \n\t ", TEXT),
    ],
    ids=["empty", "whitespace", "absent", "empty object", "no JSON body", "no text body", "whitespace text"],
)
def test_a_missing_or_blank_message_is_missing_message(body: Any, headers: dict[str, str]) -> None:
    error = refusal(body, headers)

    assert (type(error), error.code, error.status) == (InvalidRequestError, "missing_message", 400)
    assert error.message == "Message is required."


@pytest.mark.parametrize("message", [5, None, ["hi"], {"text": "hi"}, True])
def test_a_message_that_is_not_a_string_is_invalid_body(message: Any) -> None:
    error = refusal({"message": message, "session_id": "s1"}, JSON)

    assert error.code == "invalid_body"
    assert f"message: Input should be a valid string (got {message!r})" in error.message


def test_a_message_over_the_limit_is_413_message_too_large() -> None:
    json_error = refusal({"message": "x" * 101}, JSON)
    text_error = refusal("é".encode() * 51, TEXT)  # 51 characters, 102 bytes

    assert isinstance(json_error, MessageTooLargeError) and json_error.status == 413
    assert json_error.message.startswith("The message is 101 bytes, over the limit of 100 bytes")
    assert (text_error.code, text_error.status) == ("message_too_large", 413)
    assert text_error.message.startswith("The message is 102 bytes, over the limit of 100 bytes")


def test_a_message_at_the_limit_is_accepted() -> None:
    assert parse({"message": "x" * 100, "session_id": "s1"}, JSON).message == "x" * 100


def test_a_body_far_over_the_limit_is_refused_before_it_is_parsed() -> None:
    # Six times the message limit plus 4096 bytes for the rest: what any valid body could need.
    error = refusal(b"x" * (100 * 6 + 4096 + 1), TEXT)

    assert (error.code, error.status) == ("message_too_large", 413)
    assert error.message.startswith("The request body is 4697 bytes, over the limit of 4696 bytes")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [(b"{not json", "The body is not valid JSON"), (b'["hi"]', "The body must be a JSON object like")],
)
def test_a_json_body_that_is_not_an_object_is_invalid_json(raw: bytes, problem: str) -> None:
    error = refusal(raw, JSON)

    assert error.code == "invalid_json"
    assert error.message.startswith(problem)
    assert '{"message": "...", "session_id": "..."}' in error.message


def test_a_body_that_is_not_utf8_is_invalid_encoding() -> None:
    error = refusal(b"caf\xe9", TEXT)

    assert error.code == "invalid_encoding"
    assert "byte 3" in error.message


# --- The published fields, in either spelling ------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}


@pytest.mark.parametrize(
    "body",
    [
        {"message": "hi", "sessionId": "s1"},
        {"message": "hi", "threadId": "s1"},
        {"message": "hi", "session_id": "s1", "sessionId": "s1"},
    ],
    ids=["sessionId", "threadId", "both spellings agree"],
)
def test_the_camel_case_session_names_are_read_too(body: dict[str, Any]) -> None:
    assert parse(body, JSON).session_id == "s1"


def test_camel_case_session_names_conflict_like_the_others() -> None:
    error = refusal({"message": "hi", "sessionId": "s1"}, JSON, {"thread_id": "s2"})

    assert error.code == "conflicting_session_id"
    assert (
        error.message
        == "Conflicting session identifiers supplied: sessionId in the body='s1', thread_id in the query='s2'."
    )


def test_wait_for_response_in_camel_case_is_read_in_body_and_query() -> None:
    assert parse({"message": "hi", "waitForResponse": False}, JSON).wait is False
    assert parse(b"hi", TEXT, {"waitForResponse": "no"}).wait is False


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, ("user", None, True)),
        ({"role": "SYSTEM "}, ("system", None, True)),
        ({"role": "  "}, ("user", None, True)),
        ({"enable_tool_calls": False}, ("user", None, False)),
        ({"enableToolCalls": "no"}, ("user", None, False)),
        ({"enable_tool_calls": 1}, ("user", None, True)),
        (
            {"response_format": SCHEMA},
            ("user", {"type": "json_schema", "json_schema": {"name": "response", "schema": SCHEMA}}, True),
        ),
        (
            {"responseFormat": {"type": "json_schema", "json_schema": {"name": "note", "schema": SCHEMA}}},
            ("user", {"type": "json_schema", "json_schema": {"name": "note", "schema": SCHEMA}}, True),
        ),
    ],
)
def test_role_response_format_and_tool_calls_are_read(body: dict[str, Any], expected: tuple[Any, ...]) -> None:
    request = parse({"message": "hi", **body}, JSON)

    assert (request.role, request.response_format, request.enable_tool_calls) == expected


def test_the_operation_carries_only_what_differs_from_a_plain_turn() -> None:
    plain = parse({"message": "hi"}, JSON)
    asked = parse({"message": "hi", "role": "system", "response_format": SCHEMA, "enable_tool_calls": False}, JSON)

    assert plain.asked() == {"message": "hi"}
    assert asked.asked() == {
        "message": "hi",
        "role": "system",
        "responseFormat": {"type": "json_schema", "json_schema": {"name": "response", "schema": SCHEMA}},
        "enableToolCalls": False,
    }


@pytest.mark.parametrize(
    ("body", "code", "problem"),
    [
        ({"role": "tool"}, "invalid_role", "role must be one of user, system, assistant, got 'tool'"),
        ({"role": 7}, "invalid_role", "got 7"),
        ({"response_format": "json"}, "invalid_response_format", "it must be a JSON schema object, got str"),
        ({"response_format": {"type": 5}}, "invalid_response_format", "is not a valid JSON schema"),
        ({"enable_tool_calls": "sometimes"}, "invalid_body", "enable_tool_calls must be true or false"),
        (
            {"response_format": SCHEMA, "responseFormat": {"type": "object"}},
            "invalid_body",
            "The body gives response_format and responseFormat different values",
        ),
        (
            {"enable_tool_calls": True, "enableToolCalls": False},
            "invalid_body",
            "enable_tool_calls and enableToolCalls different values (True and False)",
        ),
    ],
)
def test_unusable_published_fields_are_refused_naming_them(body: dict[str, Any], code: str, problem: str) -> None:
    # That host accepts any role, 500s on a JSON schema and silently takes an unreadable switch for true.
    error = refusal({"message": "hi", **body}, JSON)

    assert error.code == code
    assert problem in error.message
