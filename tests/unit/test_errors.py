"""Errors: one code-to-status table, codes a class does not declare refused, and messages written from the facts.

The source scan at the end keeps the table honest: every code the package spells anywhere must be in it.
"""

from __future__ import annotations

import ast
import gc
import re
from pathlib import Path

import pytest

from agent_host._errors import (
    ERROR_STATUS,
    INTERNAL_ERROR_CODE,
    AgentHostError,
    AgentNotFoundError,
    ApprovalAnsweredError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    InvalidRequestError,
    MessageTooLargeError,
    MethodNotAllowedError,
    StateCapacityExceededError,
    StateCorruptError,
    StateVersionError,
    StorageUnavailableError,
    TurnExpiredError,
    TurnFailedError,
    TurnNotFoundError,
    UnknownApprovalError,
    UnsupportedMediaTypeError,
    internal_error,
    public_error_classes,
    status_for_code,
)

PACKAGE = Path(__file__).resolve().parents[2] / "agent_host"

# The whole table, spelled out: a code that changes status, appears or disappears shows up here first.
EXPECTED_STATUS = {
    "internal_error": 500,
    "invalid_body": 400,
    "invalid_json": 400,
    "invalid_encoding": 400,
    "missing_message": 400,
    "invalid_conversation_id": 400,
    "invalid_turn_id": 400,
    "invalid_idempotency_key": 400,
    "invalid_query": 400,
    "invalid_timeout": 400,
    "invalid_last_event_id": 400,
    "invalid_retention": 400,
    "too_many_approvals": 400,
    "conflicting_session_id": 400,
    "unknown_operation": 400,
    "invalid_workflow_run": 400,
    "invalid_workflow_input": 400,
    "invalid_run_id": 400,
    "invalid_response": 400,
    "invalid_response_format": 400,
    "invalid_options": 400,
    "invalid_contents": 400,
    "invalid_role": 400,
    "invalid_approval_ttl": 400,
    "invalid_request": 400,
    "unknown_approval": 400,
    "unauthenticated": 401,
    "agent_not_found": 404,
    "conversation_not_found": 404,
    "turn_not_found": 404,
    "response_not_found": 404,
    "workflow_not_found": 404,
    "run_not_found": 404,
    "request_not_found": 404,
    "method_not_allowed": 405,
    "idempotency_key_reused": 409,
    "request_already_answered": 409,
    "approval_already_answered": 409,
    "approval_expired": 409,
    "turn_finished": 409,
    "conversation_busy": 409,
    "turn_expired": 410,
    "message_too_large": 413,
    "unsupported_media_type": 415,
    "state_corrupt": 422,
    "state_version_unsupported": 422,
    "turn_failed": 502,
    "invalid_structured_output": 502,
    "storage_unavailable": 503,
    "state_capacity_exceeded": 507,
}


# --- The one table -------------------------------------------------------------------------------------------------


def test_error_status_is_exactly_the_documented_table() -> None:
    assert ERROR_STATUS == EXPECTED_STATUS


def test_every_code_a_class_declares_maps_to_that_class_status() -> None:
    classes = public_error_classes()

    declared = {code: cls.status for cls in classes.values() for code in cls.codes}

    assert declared == ERROR_STATUS
    for name, cls in classes.items():
        for code in cls.codes:
            assert status_for_code(code) == cls.status, f"{name} declares {code!r}"


def test_a_made_error_carries_the_status_of_its_code() -> None:
    errors: list[AgentHostError] = [
        InvalidRequestError("bad", code="too_many_approvals"),
        TurnExpiredError("c1", "t1"),
        StorageUnavailableError("down"),
        StateCapacityExceededError("c1", 2000, 1000, "keep_all"),
    ]

    assert [(error.code, error.status, status_for_code(error.code)) for error in errors] == [
        ("too_many_approvals", 400, 400),
        ("turn_expired", 410, 410),
        ("storage_unavailable", 503, 503),
        ("state_capacity_exceeded", 507, 507),
    ]


def test_a_code_declared_with_a_second_status_is_refused_when_the_class_is_defined() -> None:
    before = dict(ERROR_STATUS)

    with pytest.raises(TypeError, match=r"'invalid_body' of ConflictingError has status 500, elsewhere 400"):

        class ConflictingError(AgentHostError):
            codes = ("invalid_body",)
            status = 500

    gc.collect()  # the half-made class lingers in __subclasses__ until collected
    assert before == ERROR_STATUS
    assert "ConflictingError" not in public_error_classes()


def test_status_for_an_unknown_code_is_500() -> None:
    assert status_for_code("no_such_code") == 500
    assert status_for_code("") == 500


# --- Codes on construction -----------------------------------------------------------------------------------------


def test_a_class_defaults_to_its_first_code() -> None:
    assert InvalidRequestError("The body is wrong.").code == "invalid_body"
    assert AgentHostError("Something broke.").code == INTERNAL_ERROR_CODE


def test_a_declared_code_is_kept() -> None:
    error = InvalidRequestError("Conversation id 'a b' is invalid.", code="invalid_conversation_id")

    assert error.to_record() == {"code": "invalid_conversation_id", "message": "Conversation id 'a b' is invalid."}


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (InvalidRequestError, "turn_expired"),
        (InvalidRequestError, "state_corrupt"),
        (AgentHostError, "invalid_body"),
        (InvalidRequestError, "no_such_code"),
    ],
)
def test_a_code_the_class_does_not_declare_is_refused(cls: type[AgentHostError], code: str) -> None:
    with pytest.raises(ValueError, match=rf"{cls.__name__} cannot carry code '{code}'; it declares "):
        cls("message", code=code)


def test_a_refused_code_message_lists_the_declared_ones() -> None:
    with pytest.raises(ValueError) as caught:
        InvalidRequestError("message", code="turn_expired")

    assert "invalid_body, invalid_json, invalid_encoding, missing_message" in str(caught.value)
    assert str(caught.value).endswith(
        "invalid_run_id, invalid_response, invalid_response_format, invalid_options, invalid_contents, invalid_role, "
        "invalid_approval_ttl, invalid_request."
    )


def test_a_subclass_code_is_not_open_to_its_parent() -> None:
    # unknown_approval belongs to UnknownApprovalError alone, though both answer 400.
    with pytest.raises(ValueError, match="cannot carry code 'unknown_approval'"):
        InvalidRequestError("message", code="unknown_approval")


# --- Messages written from the facts -------------------------------------------------------------------------------


def test_turn_expired_names_the_turn_and_the_settings_that_bound_records() -> None:
    error = TurnExpiredError("c1", "t1")

    assert error.message.startswith(
        "Turn 't1' of conversation 'c1' completed, but its result is no longer kept: turn records are bounded"
    )
    assert "AGENT_HOST_MAX_TURN_RECORDS" in error.message
    assert "AGENT_HOST_TURN_RECORD_TTL_SECONDS" in error.message
    assert error.message.endswith("Read results sooner, or read the conversation's messages.")


def test_turn_expired_body_names_the_conversation_turn_and_status() -> None:
    error = TurnExpiredError("c1", "t1")

    assert error.body() == {
        "conversationId": "c1",
        "turnId": "t1",
        "status": "expired",
        "error": {"code": "turn_expired", "message": error.message},
    }
    assert error.to_record() == {"code": "turn_expired", "message": error.message}


def test_a_plain_error_body_is_the_error_alone() -> None:
    error = TurnNotFoundError("c1", "t9")

    assert error.body() == {
        "error": {"code": "turn_not_found", "message": "Turn 't9' is unknown in conversation 'c1'."}
    }
    assert error.headers == {}


def test_capacity_refused_before_the_model_ran_says_nothing_changed_and_how_to_fix() -> None:
    error = StateCapacityExceededError("c1", 1_200_000, 1_000_000, "keep_all")

    assert error.message.startswith(
        "Conversation 'c1' would grow to 1200000 bytes, over its 1000000-byte budget (maxStateBytes) under "
        "retention 'keep_all', which never deletes."
    )
    assert "refused before the model ran and nothing was changed" in error.message
    assert "Switch to retention 'auto' or 'follow_compaction', raise maxStateBytes" in error.message
    assert "may never be evicted" not in error.message


def test_capacity_over_budget_after_the_answer_names_the_protected_bytes() -> None:
    error = StateCapacityExceededError("c1", 900_000, 600_000, "auto", protected=700_000)

    assert error.message.startswith(
        "Conversation 'c1' stores 900000 bytes, over its 600000-byte budget (maxStateBytes) under retention 'auto', "
        "and 700000 bytes of it may never be evicted"
    )
    assert "Nothing was deleted; the answer was delivered." in error.message
    assert "refused before the model ran" not in error.message
    assert error.code == "state_capacity_exceeded"


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (None, "The stored conversation has no schemaVersion, so no version of this host wrote it. Restore it"),
        (4, "The stored conversation has schema version 4; this host reads versions up to 3. Deploy a host version"),
        (1, "The stored conversation has schema version 1, older than this host reads (3), with no migration."),
        ("3", "The stored conversation has schema version '3', which is not a version number. Restore it"),
        (True, "The stored conversation has schema version True, which is not a version number."),
        (3.0, "The stored conversation has schema version 3.0, which is not a version number."),
    ],
)
def test_state_version_error_explains_each_kind_of_version(found: object, expected: str) -> None:
    error = StateVersionError(found, 3)

    assert error.message.startswith(expected)
    assert error.message.endswith("nothing was changed.")
    assert error.code == "state_version_unsupported"


def test_only_a_newer_version_advises_a_newer_host() -> None:
    newer = StateVersionError(9, 3).message
    others = [StateVersionError(found, 3).message for found in (None, 2, "x")]

    assert "Deploy a host version that knows it" in newer
    assert "delete the conversation" not in newer
    assert all("delete the conversation to start over" in message for message in others)
    assert not any("Deploy a host version" in message for message in others)


@pytest.mark.parametrize(
    ("error", "code", "status", "message"),
    [
        (
            UnknownApprovalError("ap9", ["ap1", "ap2"]),
            "unknown_approval",
            400,
            "Approval 'ap9' is not pending in this conversation (pending: ap1, ap2). "
            "Answer each request from the last turn's approvalRequests once.",
        ),
        (
            UnknownApprovalError("ap9", []),
            "unknown_approval",
            400,
            "Approval 'ap9' is not pending in this conversation (pending: none). "
            "Answer each request from the last turn's approvalRequests once.",
        ),
        (
            AgentNotFoundError("helper", ["assistant", "planner"]),
            "agent_not_found",
            404,
            "No agent named 'helper' is registered. Known agents: assistant, planner.",
        ),
        (
            AgentNotFoundError("helper", []),
            "agent_not_found",
            404,
            "No agent named 'helper' is registered. Known agents: none.",
        ),
        (
            ConversationNotFoundError("assistant", "c1"),
            "conversation_not_found",
            404,
            "Conversation 'c1' of agent 'assistant' does not exist. Start it by posting a turn to .../turns.",
        ),
        (
            ConversationNotFoundError("assistant", "c1", deleted=True),
            "conversation_not_found",
            404,
            "Conversation 'c1' of agent 'assistant' was deleted, with its turns. "
            "Start it by posting a turn to .../turns.",
        ),
        (
            IdempotencyConflictError("key-1", "t1"),
            "idempotency_key_reused",
            409,
            "Idempotency-Key 'key-1' was already used for turn 't1' with a different request. "
            "Use a new key for a new request.",
        ),
        (
            MessageTooLargeError(40_000, 32_768),
            "message_too_large",
            413,
            "The message is 40000 bytes, over the limit of 32768 bytes (AGENT_HOST_MAX_MESSAGE_BYTES). "
            "Send a shorter message.",
        ),
        (
            MessageTooLargeError(300_000, 200_704, what="request body"),
            "message_too_large",
            413,
            "The request body is 300000 bytes, over the limit of 200704 bytes (AGENT_HOST_MAX_MESSAGE_BYTES). "
            "Send a shorter message.",
        ),
        (
            UnsupportedMediaTypeError("text/xml", "application/json or text/plain"),
            "unsupported_media_type",
            415,
            "Content type 'text/xml' is not supported; send application/json or text/plain.",
        ),
        (
            UnsupportedMediaTypeError("application/x-www-form-urlencoded", "application/json"),
            "unsupported_media_type",
            415,
            "Content type 'application/x-www-form-urlencoded' is not supported; send application/json. "
            "curl -d sends it unless told otherwise: add -H 'Content-Type: application/json'.",
        ),
        (
            ApprovalAnsweredError("ap1", True, ["ap2"]),
            "approval_already_answered",
            409,
            "Approval 'ap1' was already answered (approved) by an earlier turn; an approval takes one answer "
            "(pending now: ap2). Nothing was run.",
        ),
        (
            StateCorruptError("is not valid JSON (Expecting value)"),
            "state_corrupt",
            422,
            "The stored conversation is not valid JSON (Expecting value). It was left unchanged; restore it from a "
            "backup or delete the conversation to start over.",
        ),
        (
            TurnFailedError("The model call failed (RuntimeError)."),
            "turn_failed",
            502,
            "The model call failed (RuntimeError). The conversation's earlier history is unchanged; send the next "
            "turn to continue.",
        ),
        (
            StorageUnavailableError("the durable host could not be reached: ClientConnectorError"),
            "storage_unavailable",
            503,
            "The durable store is unavailable (the durable host could not be reached: ClientConnectorError). "
            "Retry shortly; nothing was lost.",
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, AgentHostError) else None,
)
def test_each_error_writes_its_message_from_its_facts(
    error: AgentHostError, code: str, status: int, message: str
) -> None:
    assert (error.code, error.status, error.message, str(error)) == (code, status, message, message)


def test_internal_error_is_generic_and_coded_internal_error() -> None:
    error = internal_error()

    assert type(error) is AgentHostError
    assert error.code == "internal_error" and error.status == 500
    assert error.body() == {
        "error": {
            "code": "internal_error",
            "message": "The request failed unexpectedly; the host's log has the details.",
        }
    }


def test_method_not_allowed_carries_an_allow_header_of_exactly_the_methods_it_names() -> None:
    error = MethodNotAllowedError("DELETE", ("GET", "PUT"))

    assert error.message == "DELETE is not allowed here; use GET or PUT."
    assert error.headers == {"Allow": "GET, PUT"}
    assert (error.code, error.status) == ("method_not_allowed", 405)
    assert error.body() == {"error": {"code": "method_not_allowed", "message": error.message}}


def test_method_not_allowed_with_one_method() -> None:
    error = MethodNotAllowedError("POST", ("GET",))

    assert (error.message, error.headers) == ("POST is not allowed here; use GET.", {"Allow": "GET"})


def test_errors_do_not_share_their_fields_or_headers() -> None:
    expired = TurnExpiredError("c1", "t1")
    plain = TurnNotFoundError("c1", "t2")

    expired.fields["extra"] = "x"

    assert plain.fields == {} and plain.headers == {}
    assert TurnExpiredError("c2", "t2").fields == {"conversationId": "c2", "turnId": "t2", "status": "expired"}


# --- Every code the package spells is in the table -----------------------------------------------------------------


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _codes_in(tree: ast.AST) -> set[str]:
    """Every error code a module spells: `code="..."` arguments, `codes`/`error_code`/`field_codes` assignments."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "code" and _string(node.value) is not None:
            found.add(_string(node.value))  # type: ignore[arg-type]
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        names = {target.id for target in targets if isinstance(target, ast.Name)}
        if names & {"codes", "error_code"}:
            parts = value.elts if isinstance(value, ast.Tuple) else [value]
            found.update(code for part in parts if (code := _string(part)) is not None)
        if "field_codes" in names and isinstance(value, ast.Dict):
            found.update(code for part in value.values if (code := _string(part)) is not None)
    return found


def package_codes() -> dict[str, set[str]]:
    """Codes spelled in each module of the package.

    The local host is left out: it stands in for the Functions host, whose own platform answers (401, 403, a 404
    for an unknown route) are not the package's errors.
    """
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("_local_host/"):
            continue
        codes = _codes_in(ast.parse(path.read_text(encoding="utf-8")))
        if codes:
            found[relative] = codes
    return found


def test_the_source_scan_finds_codes_where_they_are_spelled() -> None:
    # If the scan finds nothing, the test below passes vacuously: pin a few codes and where they are raised.
    found = package_codes()

    assert {"conflicting_session_id", "missing_message"} <= found["_http/run_route.py"]
    assert {"invalid_json", "invalid_encoding", "invalid_body", "invalid_idempotency_key"} <= found["_http/requests.py"]
    assert {"invalid_query", "invalid_timeout", "invalid_retention", "too_many_approvals"} <= found["_contract.py"]
    assert "unknown_operation" in found["_conversation/entity.py"]
    assert set(EXPECTED_STATUS) - {"internal_error"} <= found["_errors.py"]


def test_every_code_the_package_spells_is_in_the_status_table() -> None:
    unknown = {
        module: sorted(codes - set(ERROR_STATUS))
        for module, codes in package_codes().items()
        if codes - ERROR_STATUS.keys()
    }

    assert unknown == {}


def test_every_code_is_documented_in_the_http_reference_with_its_status() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "http.md").read_text(encoding="utf-8")
    documented = {code: int(status) for code, status in re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \|", text, re.M)}

    assert documented == ERROR_STATUS
