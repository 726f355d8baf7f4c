"""The wire contract: each malformed body or parameter gets its own code and a message naming the field."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from agent_host._contract import (
    MAX_APPROVALS_PER_TURN,
    ChangeOperation,
    MessagesQuery,
    RetentionRequest,
    RunOperation,
    SetRetentionOperation,
    TurnQuery,
    TurnRequest,
    describe_problems,
    parse_model,
    validate_conversation_id,
    validate_turn_id,
)
from agent_host._errors import InvalidRequestError
from agent_host._retention_settings import MAX_STATE_BYTES_CEILING, RetentionSettings

TURN_SHAPE = (
    'Expected {"message": string, "approvals": [{"id": string, "approved": boolean}], "wait": boolean, '
    '"timeoutSeconds": number, "stream": boolean, "contents": [{"type": "text" | "uri" | "data", ...}], '
    '"responseFormat": {JSON schema}, "options": {"temperature": number, ...}, "approvalTtlSeconds": number, '
    '"ifBusy": "enqueue" | "reject" | "interrupt" | "rollback"}.'
)


def refusal(model: type[Any], data: Any, **context: Any) -> InvalidRequestError:
    """The error `parse_model` raises for `data` (the test fails if it accepts it)."""
    with pytest.raises(InvalidRequestError) as caught:
        parse_model(model, data, **context)
    return caught.value


def approvals(count: int) -> list[dict[str, Any]]:
    return [{"id": f"ap{n}", "approved": n % 2 == 0} for n in range(count)]


# --- TurnRequest ---------------------------------------------------------------------------------------------------


def test_turn_request_reads_camel_case_fields() -> None:
    request = parse_model(
        TurnRequest, {"message": "Hi", "wait": False, "timeoutSeconds": 2.5, "approvals": approvals(1)}
    )

    assert (request.message, request.wait, request.timeout_seconds) == ("Hi", False, 2.5)
    assert [(a.id, a.approved) for a in request.approvals or []] == [("ap0", True)]


def test_a_message_of_the_wrong_type_is_invalid_body() -> None:
    error = refusal(TurnRequest, {"message": 5})

    assert error.code == "invalid_body"
    assert error.message == f"The request is not valid: message: Input should be a valid string (got 5). {TURN_SHAPE}"


def test_a_body_that_is_not_an_object_is_invalid_body() -> None:
    error = refusal(TurnRequest, ["Hi"])

    assert error.code == "invalid_body"
    assert error.message.startswith("The request is not valid: body: Input should be a valid dictionary")


@pytest.mark.parametrize("body", [{"message": ""}, {"message": "   \n\t"}, {"message": None}, {}, {"approvals": []}])
def test_no_message_and_no_approvals_is_missing_message(body: dict[str, Any]) -> None:
    error = refusal(TurnRequest, body)

    assert error.code == "missing_message"
    assert error.status == 400
    assert "message" in error.message and TURN_SHAPE in error.message


def test_a_blank_message_says_it_is_empty() -> None:
    assert "message: the message is empty; send some text (got '  ')" in refusal(TurnRequest, {"message": "  "}).message


def test_a_body_without_a_message_shows_both_ways_to_send_one() -> None:
    error = refusal(TurnRequest, {"wait": True})

    assert error.message.startswith('The request is not valid: body: the body has no message; send {"message": "..."}')
    assert '{"approvals": [{"id": "...", "approved": true}]}' in error.message


def test_answers_alone_need_no_message() -> None:
    request = parse_model(TurnRequest, {"approvals": approvals(2)})

    assert request.message is None
    assert [a.id for a in request.approvals or []] == ["ap0", "ap1"]


def test_more_than_32_approvals_is_too_many_approvals() -> None:
    error = refusal(TurnRequest, {"approvals": approvals(MAX_APPROVALS_PER_TURN + 1)})

    assert MAX_APPROVALS_PER_TURN == 32
    assert error.code == "too_many_approvals"
    assert "approvals: List should have at most 32 items after validation, not 33" in error.message


def test_exactly_32_approvals_are_accepted() -> None:
    assert len(parse_model(TurnRequest, {"approvals": approvals(32)}).approvals or []) == 32


def test_a_malformed_answer_is_invalid_body_not_too_many_approvals() -> None:
    # The approvals field has its own code for a count out of range; a wrong type inside it is a malformed body.
    error = refusal(TurnRequest, {"approvals": [{"id": 1, "approved": "yes"}]})

    assert error.code == "invalid_body"
    assert "approvals.0.id: Input should be a valid string (got 1)" in error.message
    assert "approvals.0.approved: Input should be a valid boolean (got 'yes')" in error.message


@pytest.mark.parametrize("timeout", [0, -1, -0.5, math.nan, math.inf, 120.5, 121])
def test_a_timeout_out_of_range_is_invalid_timeout(timeout: float) -> None:
    error = refusal(TurnRequest, {"message": "Hi", "timeoutSeconds": timeout}, max_wait_seconds=120)

    assert error.code == "invalid_timeout"
    assert f"timeoutSeconds: timeoutSeconds must be more than 0 and at most 120 (got {timeout!r})" in error.message


def test_the_longest_timeout_is_the_max_wait_seconds_context() -> None:
    assert (
        parse_model(TurnRequest, {"message": "Hi", "timeoutSeconds": 120}, max_wait_seconds=120).timeout_seconds == 120
    )
    assert refusal(TurnRequest, {"message": "Hi", "timeoutSeconds": 31}, max_wait_seconds=30).code == "invalid_timeout"


@pytest.mark.parametrize("timeout", ["5", True, [5]])
def test_a_timeout_of_the_wrong_type_is_invalid_body(timeout: Any) -> None:
    error = refusal(TurnRequest, {"message": "Hi", "timeoutSeconds": timeout})

    assert error.code == "invalid_body"
    assert "timeoutSeconds" in error.message


def test_wait_must_be_a_json_boolean() -> None:
    error = refusal(TurnRequest, {"message": "Hi", "wait": "false"})

    assert error.code == "invalid_body"
    assert "wait: Input should be a valid boolean (got 'false')" in error.message


def test_an_unknown_field_is_invalid_body_naming_it() -> None:
    error = refusal(TurnRequest, {"message": "Hi", "colour": "red"})

    assert error.code == "invalid_body"
    assert "colour: Extra inputs are not permitted (got 'red')" in error.message


def test_every_problem_is_named_and_the_first_decides_the_code() -> None:
    error = refusal(TurnRequest, {"message": 5, "timeoutSeconds": 0, "extra": 1})

    assert error.code == "invalid_body"
    assert "message: Input should be a valid string (got 5)" in error.message
    assert "timeoutSeconds: timeoutSeconds must be more than 0" in error.message
    assert "extra: Extra inputs are not permitted (got 1)" in error.message


# --- Query parameters ----------------------------------------------------------------------------------------------


def test_turn_query_reads_text_values() -> None:
    query = parse_model(TurnQuery, {"wait": "false", "timeoutSeconds": "5"}, max_wait_seconds=120)

    assert (query.wait, query.timeout_seconds) == (False, 5.0)


def test_turn_query_ignores_other_parameters_such_as_the_function_key() -> None:
    query = parse_model(TurnQuery, {"code": "function-key", "wait": "true"})

    assert (query.wait, query.timeout_seconds) == (True, None)


def test_an_unreadable_wait_parameter_is_invalid_query() -> None:
    error = refusal(TurnQuery, {"wait": "maybe"})

    assert error.code == "invalid_query"
    assert error.message == (
        "The request is not valid: wait: Input should be a valid boolean, unable to interpret input (got 'maybe')."
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("soon", "unable to parse string as a number (got 'soon')"),
        ("0", "timeoutSeconds must be more than 0 and at most 120 (got '0')"),
        ("-3", "timeoutSeconds must be more than 0 and at most 120 (got '-3')"),
        ("500", "timeoutSeconds must be more than 0 and at most 120 (got '500')"),
        ("nan", "timeoutSeconds must be more than 0 and at most 120 (got 'nan')"),
    ],
)
def test_every_problem_of_the_timeout_parameter_is_invalid_timeout(value: str, problem: str) -> None:
    # A query parameter is always text: a word where a number belongs is its own code too, not invalid_query.
    error = refusal(TurnQuery, {"timeoutSeconds": value}, max_wait_seconds=120)

    assert error.code == "invalid_timeout"
    assert problem in error.message


def test_messages_query_reads_include_excluded() -> None:
    assert parse_model(MessagesQuery, {"includeExcluded": "true"}).include_excluded is True
    assert parse_model(MessagesQuery, {}).include_excluded is False
    assert refusal(MessagesQuery, {"includeExcluded": "perhaps"}).code == "invalid_query"


# --- RetentionRequest ----------------------------------------------------------------------------------------------


def test_retention_request_needs_mode_and_budget() -> None:
    error = refusal(RetentionRequest, {})

    assert error.code == "invalid_retention"
    assert error.message.startswith("The request is not valid: mode: Field required; maxStateBytes: Field required.")
    assert 'Expected {"mode": "keep_all" | "auto" | "follow_compaction", "maxStateBytes": integer 4096 to 983040' in (
        error.message
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"mode": "auto"}, "maxStateBytes: Field required"),
        ({"maxStateBytes": 100_000}, "mode: Field required"),
        ({"mode": "sometimes", "maxStateBytes": 100_000}, "mode: Input should be 'keep_all', 'auto' or 'follow"),
        ({"mode": "auto", "maxStateBytes": 4095}, "maxStateBytes: Input should be greater than or equal to 4096"),
        (
            {"mode": "auto", "maxStateBytes": 10**12},
            "maxStateBytes: must be at most 983040 (960 KiB), the largest state every durable backend stores "
            "(got 1000000000000)",
        ),
        ({"mode": "auto", "maxStateBytes": "100000"}, "maxStateBytes: Input should be a valid integer"),
        (
            {"mode": "auto", "maxStateBytes": 100_000, "highWatermark": 0.5, "lowWatermark": 0.6},
            "body: the low watermark (0.6) must be below the high watermark (0.5)",
        ),
        ({"mode": "auto", "maxStateBytes": 100_000, "budget": 1}, "budget: Extra inputs are not permitted"),
    ],
)
def test_every_bad_retention_body_is_invalid_retention(body: dict[str, Any], problem: str) -> None:
    error = refusal(RetentionRequest, body)

    assert error.code == "invalid_retention"
    assert problem in error.message


def test_a_retention_request_takes_default_watermarks() -> None:
    request = parse_model(RetentionRequest, {"mode": "keep_all", "maxStateBytes": 4096})

    assert request.stored() == {"mode": "keep_all", "maxStateBytes": 4096, "highWatermark": 0.85, "lowWatermark": 0.7}


# --- Entity operation inputs ---------------------------------------------------------------------------------------


def test_run_operation_reads_its_input() -> None:
    operation = RunOperation.model_validate(
        {
            "turnId": "018f2a3b4c5d6e7f",
            "message": "Hi",
            "approvals": [{"id": "ap1", "approved": False}],
            "idempotencyKey": "key-1",
            "requestHash": "abc",
        }
    )

    assert (operation.turn_id, operation.message, operation.idempotency_key) == ("018f2a3b4c5d6e7f", "Hi", "key-1")
    assert [(a.id, a.approved) for a in operation.approvals] == [("ap1", False)]


def test_run_operation_needs_a_turn_id() -> None:
    error = refusal(RunOperation, {"message": "Hi"})

    assert error.code == "invalid_body"
    assert "turnId: Field required" in error.message


def test_run_operation_refuses_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="sessionId"):
        RunOperation.model_validate({"turnId": "t1", "sessionId": "s1"})


def accepted_ids(model: type[Any], field: str, candidates: list[str], **other: Any) -> list[str]:
    """The candidate ids `model` accepts for `field`."""
    accepted = []
    for candidate in candidates:
        try:
            model.model_validate({field: candidate, **other})
        except ValidationError:
            continue
        accepted.append(candidate)
    return accepted


# Ids the HTTP side would refuse (validate_turn_id, the same pattern matched whole); the entity must not take them
# from a signal either, whatever sent it.
BAD_IDS = ["", "t 1", "../t1", "t1\n", "t" * 65, "t.1"]


def test_run_operation_refuses_a_turn_id_outside_the_turn_id_pattern() -> None:
    assert accepted_ids(RunOperation, "turnId", BAD_IDS, message="Hi") == []


def test_set_retention_operation_reads_its_settings() -> None:
    operation = SetRetentionOperation.model_validate(
        {"changeId": "change-1", "retention": {"mode": "follow_compaction", "maxStateBytes": 8192}}
    )

    assert operation.change_id == "change-1"
    assert operation.retention.stored() == RetentionSettings(mode="follow_compaction", max_state_bytes=8192).stored()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"retention": {"mode": "auto"}}, "changeId"),
        ({"changeId": "change-1"}, "retention"),
        ({"changeId": "change-1", "retention": {"mode": "never"}}, "retention.mode"),
        ({"changeId": "change-1", "retention": {"maxStateBytes": 10}}, "retention.maxStateBytes"),
        ({"changeId": "change-1", "retention": {"maxStateBytes": 983_041}}, "retention.maxStateBytes"),
    ],
)
def test_set_retention_operation_refuses_bad_input(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SetRetentionOperation.model_validate(data)

    assert field in [".".join(str(part) for part in item["loc"]) for item in caught.value.errors()]


def test_change_operation_refuses_a_change_id_outside_its_pattern() -> None:
    assert accepted_ids(ChangeOperation, "changeId", [*BAD_IDS, "c/1"]) == []


# --- Ids -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("conversation_id", ["c1", "a", "A.b_c-9", "9" * 128, "user-42.session_7"])
def test_valid_conversation_ids_are_returned_unchanged(conversation_id: str) -> None:
    assert validate_conversation_id(conversation_id) == conversation_id


@pytest.mark.parametrize(
    "conversation_id", ["", "a" * 129, "-c1", ".c1", "_c1", "a..b", "c 1", "c/1", "c1\n", "café", "c1?x=1"]
)
def test_invalid_conversation_ids_are_refused_with_the_rule(conversation_id: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        validate_conversation_id(conversation_id)

    assert caught.value.code == "invalid_conversation_id"
    assert caught.value.message == (
        f"Conversation id {conversation_id!r} is invalid: use 1-128 characters from A-Z a-z 0-9 . _ -, starting "
        "with a letter or digit, without '..'."
    )


def test_a_very_long_conversation_id_is_shown_shortened() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        validate_conversation_id("x" * 5000)

    assert f"Conversation id '{'x' * 140}...' is invalid" in caught.value.message
    assert len(caught.value.message) < 300


@pytest.mark.parametrize("turn_id", ["t1", "018f2a3b4c5dk1a2b3c4d", "a" * 64, "A_b-9"])
def test_valid_turn_ids_are_returned_unchanged(turn_id: str) -> None:
    assert validate_turn_id(turn_id) == turn_id


@pytest.mark.parametrize("turn_id", ["", "a" * 65, "t.1", "t 1", "../t1", "t1\n"])
def test_invalid_turn_ids_are_refused(turn_id: str) -> None:
    with pytest.raises(InvalidRequestError, match="use the turnId a turn request returned") as caught:
        validate_turn_id(turn_id)

    assert caught.value.code == "invalid_turn_id"


def test_an_invalid_turn_id_is_shown_to_80_characters() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        validate_turn_id("y" * 300)

    assert caught.value.message == f"Turn id {'y' * 80!r} is invalid: use the turnId a turn request returned."


# --- describe_problems ---------------------------------------------------------------------------------------------


def retention_problems(data: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        RetentionSettings.model_validate(data)
    return caught.value


def test_describe_problems_names_fields_by_the_callers_names() -> None:
    error = retention_problems({"mode": "never", "maxStateBytes": 10})

    described = describe_problems(
        error, {"mode": "AGENT_HOST_RETENTION_MODE", "max_state_bytes": "AGENT_HOST_MAX_STATE_BYTES"}
    )

    assert described == (
        "AGENT_HOST_RETENTION_MODE: Input should be 'keep_all', 'auto' or 'follow_compaction' (got 'never'); "
        "AGENT_HOST_MAX_STATE_BYTES: Input should be greater than or equal to 4096 (got 10)"
    )


def test_describe_problems_finds_a_name_by_wire_name_too() -> None:
    error = retention_problems({"maxStateBytes": 10})

    assert describe_problems(error, {"maxStateBytes": "max_state_bytes="}).startswith("max_state_bytes=: ")


def test_describe_problems_uses_wire_names_for_unnamed_fields() -> None:
    error = retention_problems({"highWatermark": 2, "mode": "never"})

    described = describe_problems(error, {"mode": "retention_mode"})

    assert described.startswith("retention_mode: ")
    assert "highWatermark: Input should be less than or equal to 1 (got 2)" in described


def test_describe_problems_shows_no_value_for_a_missing_field_and_calls_the_whole_input_body() -> None:
    missing = refusal(RetentionRequest, {"mode": "auto"})
    whole = retention_problems({"highWatermark": 0.5, "lowWatermark": 0.6})

    assert "maxStateBytes: Field required." in missing.message and "(got" not in missing.message
    assert describe_problems(whole) == "body: the low watermark (0.6) must be below the high watermark (0.5)"


def test_the_budget_ceiling_binds_what_callers_set_not_what_is_stored() -> None:
    at_ceiling = parse_model(RetentionRequest, {"mode": "auto", "maxStateBytes": MAX_STATE_BYTES_CEILING})
    stored = RetentionSettings.model_validate({"mode": "auto", "maxStateBytes": 1_048_576})  # an earlier default

    assert at_ceiling.max_state_bytes == MAX_STATE_BYTES_CEILING == 960 * 1024
    assert stored.max_state_bytes == 1_048_576
