"""Errors a request or a stored conversation can fail with: each class declares its codes and writes its message.

AgentHostError                      500  internal_error: anything unexpected (details go to the log only)
 ├── InvalidRequestError            400  the request is malformed; fix the request (codes in the class)
 │    └── UnknownApprovalError      400  unknown_approval: an answer names no pending approval
 ├── AgentNotFoundError             404  no agent of that name is registered
 ├── ConversationNotFoundError      404  the conversation has never run a turn (or was deleted)
 ├── TurnNotFoundError              404  the turn id was never seen in this conversation
 ├── ResponseNotFoundError          404  an OpenAI response id this app did not issue (or names a deleted conversation)
 ├── WorkflowNotFoundError          404  no workflow of that name is hosted
 ├── RunNotFoundError               404  the workflow has no run of that id
 ├── RequestNotFoundError           404  the run is not waiting for a request of that id
 ├── MethodNotAllowedError          405  the route exists but not for that method
 ├── IdempotencyConflictError       409  an Idempotency-Key was reused with a different body
 ├── RequestAnsweredError           409  the run's request was already answered
 ├── ApprovalAnsweredError          409  the tool approval was already answered
 ├── ApprovalExpiredError           409  the tool approval's lifetime passed; it was declined
 ├── TurnFinishedError              409  a cancel named a turn that already finished
 ├── ConversationBusyError          409  ifBusy reject: another turn of the conversation is in flight
 ├── TurnExpiredError               410  the turn ran, but its result is no longer kept
 ├── MessageTooLargeError           413  the message or body is over the configured size limit
 ├── UnsupportedMediaTypeError      415  the body's media type is not one the route takes
 ├── StateCorruptError              422  the stored state cannot be read; it is left untouched
 ├── StateVersionError              422  the stored state has a schema version this code does not know
 ├── TurnFailedError                502  the model or a tool failed, or the answer is not the structured output
 ├── StorageUnavailableError        503  the durable store could not be read or written
 └── StateCapacityExceededError     507  the conversation is over its byte budget

`ERROR_STATUS` is the one table from code to HTTP status, built from the classes' declarations; a code a class
does not declare is refused when the error is made. A failed turn stores `{"code", "message"}`; rendering an
error as HTTP happens in `_http/responses.py` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

INTERNAL_ERROR_CODE = "internal_error"
ERROR_STATUS: dict[str, int] = {}


class AgentHostError(Exception):
    """Base class: an error with a stable machine-readable code and an HTTP status.

    Subclasses declare the codes they may carry in `codes` (the first is their default) and their `status`.

    Raises:
        ValueError: at construction, for a code the class does not declare.
    """

    codes: ClassVar[tuple[str, ...]] = (INTERNAL_ERROR_CODE,)
    status: ClassVar[int] = 500

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for code in cls.__dict__.get("codes", ()):
            known = ERROR_STATUS.setdefault(code, cls.status)
            if known != cls.status:
                raise TypeError(f"Error code {code!r} of {cls.__name__} has status {cls.status}, elsewhere {known}.")

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None and code not in self.codes:
            raise ValueError(f"{type(self).__name__} cannot carry code {code!r}; it declares {', '.join(self.codes)}.")
        self.code: str = code or self.codes[0]
        self.message = message
        # The request field the error is about, when one is (the OpenAI Responses API's errors name it).
        self.param: str | None = None
        # Extra top-level fields of the error body (a turn error also names the turn) and response headers.
        self.fields: dict[str, str] = {}
        self.headers: dict[str, str] = {}

    def to_record(self) -> dict[str, str]:
        """The error as stored in a turn record and shown in an error body: `{"code", "message"}`."""
        return {"code": self.code, "message": self.message}

    def body(self) -> dict[str, Any]:
        """The whole error body: `{..fields, "error": {"code", "message"}}`."""
        return {**self.fields, "error": self.to_record()}


ERROR_STATUS[INTERNAL_ERROR_CODE] = AgentHostError.status


def internal_error() -> AgentHostError:
    """What a caller is told about an unexpected failure; the details go to the log only."""
    return AgentHostError("The request failed unexpectedly; the host's log has the details.")


def status_for_code(code: str) -> int:
    """The HTTP status of an error code (stored in a turn record, say); 500 for a code this version does not know."""
    return ERROR_STATUS.get(code, AgentHostError.status)


class InvalidRequestError(AgentHostError):
    """The request body, a parameter or a header is malformed; the message says what to send instead."""

    # Annotated so that subclasses may declare fewer codes (mypy would infer this tuple's exact length).
    codes: ClassVar[tuple[str, ...]] = (
        "invalid_body",
        "invalid_json",
        "invalid_encoding",
        "missing_message",
        "invalid_conversation_id",
        "invalid_turn_id",
        "invalid_idempotency_key",
        "invalid_query",
        "invalid_timeout",
        "invalid_last_event_id",
        "invalid_retention",
        "too_many_approvals",
        "conflicting_session_id",
        "unknown_operation",
        "invalid_workflow_run",
        "invalid_workflow_input",
        "invalid_run_id",
        "invalid_response",
        "invalid_response_format",
        "invalid_options",
        "invalid_contents",
        "invalid_role",
        "invalid_approval_ttl",
        "invalid_request",
    )
    status = 400


class UnknownApprovalError(InvalidRequestError):
    """An answer names a tool approval that is not pending (or answers one twice)."""

    codes = ("unknown_approval",)

    def __init__(self, approval_id: str, pending: list[str]) -> None:
        super().__init__(
            f"Approval '{approval_id}' is not pending in this conversation (pending: {', '.join(pending) or 'none'}). "
            "Answer each request from the last turn's approvalRequests once."
        )


class AgentNotFoundError(AgentHostError):
    """No agent with this name is registered on the app."""

    codes = ("agent_not_found",)
    status = 404

    def __init__(self, agent: str, known: list[str]) -> None:
        super().__init__(f"No agent named '{agent}' is registered. Known agents: {', '.join(known) or 'none'}.")


class ConversationNotFoundError(AgentHostError):
    """The conversation does not exist (no turn ran yet, or it was deleted)."""

    codes = ("conversation_not_found",)
    status = 404

    def __init__(self, agent: str, conversation_id: str, *, deleted: bool = False) -> None:
        what = "was deleted, with its turns" if deleted else "does not exist"
        super().__init__(
            f"Conversation '{conversation_id}' of agent '{agent}' {what}. Start it by posting a turn to .../turns."
        )


class UnauthenticatedError(AgentHostError):
    """Conversations have owners and the request names no principal, or the host's auth hook refused the request;
    `message` says which and what to send."""

    codes = ("unauthenticated",)
    status = 401

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "This app's conversations belong to their users, and the request names none. Sign in (App Service "
            "and Container Apps authentication pass X-MS-CLIENT-PRINCIPAL-ID), or send the identity the app's "
            "conversation_owners hook reads."
        )


class TurnNotFoundError(AgentHostError):
    """The turn id was never seen in this conversation."""

    codes = ("turn_not_found",)
    status = 404

    def __init__(self, conversation_id: str, turn_id: str) -> None:
        super().__init__(f"Turn '{turn_id}' is unknown in conversation '{conversation_id}'.")


class ResponseNotFoundError(AgentHostError):
    """An OpenAI Responses API response id that names no turn of this app's agents."""

    codes = ("response_not_found",)
    status = 404

    def __init__(self, response_id: str, param: str | None = None) -> None:
        super().__init__(
            f"No response with id '{response_id[:120]}' was found. Use the id a response of this app returned."
        )
        self.param = param


class WorkflowNotFoundError(AgentHostError):
    """No workflow of that name is hosted by this app."""

    codes = ("workflow_not_found",)
    status = 404

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"No workflow named '{name}' is hosted here (hosted: {', '.join(known) or 'none'}).")


class RunNotFoundError(AgentHostError):
    """The workflow has no run of that id (it never started, or it belongs to another workflow)."""

    codes = ("run_not_found",)
    status = 404

    def __init__(self, workflow: str, run_id: str) -> None:
        super().__init__(
            f"Workflow '{workflow}' has no run '{run_id}'. Start one with POST /api/workflows/{workflow}/runs."
        )


class RequestNotFoundError(AgentHostError):
    """The run is not waiting for a request of that id."""

    codes = ("request_not_found",)
    status = 404

    def __init__(self, run_id: str, request_id: str, pending: list[str]) -> None:
        super().__init__(
            f"Run '{run_id}' is not waiting for request '{request_id}' (pending: {', '.join(pending) or 'none'}). "
            "GET the run to see its pendingRequests."
        )


class RequestAnsweredError(AgentHostError):
    """The run's request was already answered; a request takes one response."""

    codes = ("request_already_answered",)
    status = 409

    def __init__(self, run_id: str, request_id: str) -> None:
        super().__init__(f"Request '{request_id}' of run '{run_id}' was already answered; it takes one response.")


class ApprovalAnsweredError(AgentHostError):
    """The tool approval was answered by an earlier turn; an approval takes one answer."""

    codes = ("approval_already_answered",)
    status = 409

    def __init__(self, approval_id: str, approved: bool, pending: list[str]) -> None:
        verdict = "approved" if approved else "rejected"
        super().__init__(
            f"Approval '{approval_id}' was already answered ({verdict}) by an earlier turn; an approval takes one "
            f"answer (pending now: {', '.join(pending) or 'none'}). Nothing was run."
        )


class ApprovalExpiredError(AgentHostError):
    """The tool approval's lifetime passed before its answer came; it counts as declined."""

    codes = ("approval_expired",)
    status = 409

    def __init__(self, approval_id: str, expires_at_ms: int) -> None:
        expired = datetime.fromtimestamp(expires_at_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
        super().__init__(
            f"Approval '{approval_id}' expired at {expired.replace('+00:00', 'Z')} and counts as declined; its tool "
            "does not run. Nothing was changed; ask for the tool again in a new turn."
        )


class MethodNotAllowedError(AgentHostError):
    """The route exists but does not accept this HTTP method; `Allow` lists the ones it does."""

    codes = ("method_not_allowed",)
    status = 405

    def __init__(self, method: str, allowed: tuple[str, ...]) -> None:
        super().__init__(f"{method} is not allowed here; use {' or '.join(allowed)}.")
        self.headers = {"Allow": ", ".join(allowed)}


class IdempotencyConflictError(AgentHostError):
    """An Idempotency-Key was reused with a different request body."""

    codes = ("idempotency_key_reused",)
    status = 409

    def __init__(self, key: str, original_turn_id: str = "", *, original_run_id: str | None = None) -> None:
        original = f"workflow run '{original_run_id}'" if original_run_id is not None else f"turn '{original_turn_id}'"
        super().__init__(
            f"Idempotency-Key {key!r} was already used for {original} with a different request. "
            "Use a new key for a new request."
        )


class TurnFinishedError(AgentHostError):
    """A cancel named a turn that already finished: nothing is left to stop."""

    codes = ("turn_finished",)
    status = 409

    def __init__(self, conversation_id: str, turn_id: str, status: str) -> None:
        super().__init__(
            f"Turn '{turn_id}' of conversation '{conversation_id}' already finished ({status}); there is nothing to "
            "cancel. Read the turn for its answer."
        )
        self.fields = {"conversationId": conversation_id, "turnId": turn_id, "status": status}


class ConversationBusyError(AgentHostError):
    """A turn asked `ifBusy: reject` while another turn of the conversation is in flight; nothing was stored."""

    codes = ("conversation_busy",)
    status = 409

    def __init__(self, conversation_id: str, turn_ids: list[str]) -> None:
        super().__init__(
            f"Conversation '{conversation_id}' is busy with turn {', '.join(repr(t) for t in turn_ids)}; nothing was "
            'stored. Wait for it, cancel it, or send "ifBusy": "enqueue", "interrupt" or "rollback".'
        )
        self.fields = {"conversationId": conversation_id, "busyWith": turn_ids[0]}


class TurnExpiredError(AgentHostError):
    """The turn completed, but its result is no longer kept (aged out, or dropped to keep the state in budget)."""

    codes = ("turn_expired",)
    status = 410

    def __init__(self, conversation_id: str, turn_id: str) -> None:
        super().__init__(
            f"Turn '{turn_id}' of conversation '{conversation_id}' completed, but its result is no longer kept: "
            "turn records are bounded in number (AGENT_HOST_MAX_TURN_RECORDS), age "
            "(AGENT_HOST_TURN_RECORD_TTL_SECONDS) and share of the conversation's byte budget. Read results sooner, "
            "or read the conversation's messages."
        )
        self.fields = {"conversationId": conversation_id, "turnId": turn_id, "status": "expired"}


class MessageTooLargeError(AgentHostError):
    """The message or the body is over the configured size limit."""

    codes = ("message_too_large",)
    status = 413

    def __init__(self, size: int, limit: int, what: str = "message") -> None:
        super().__init__(
            f"The {what} is {size} bytes, over the limit of {limit} bytes (AGENT_HOST_MAX_MESSAGE_BYTES). "
            "Send a shorter message."
        )


FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"


class UnsupportedMediaTypeError(AgentHostError):
    """The body is sent as a media type the route does not take (JSON routes take `application/json`)."""

    codes = ("unsupported_media_type",)
    status = 415

    def __init__(self, media_type: str, accepted: str) -> None:
        # curl -d sends a form type unless told otherwise: the most common way to get here.
        hint = (
            " curl -d sends it unless told otherwise: add -H 'Content-Type: application/json'."
            if media_type == FORM_MEDIA_TYPE
            else ""
        )
        super().__init__(f"Content type '{media_type[:80]}' is not supported; send {accepted}.{hint}")


class StateCorruptError(AgentHostError):
    """The stored conversation state cannot be read. It is left exactly as it was."""

    codes = ("state_corrupt",)
    status = 422

    def __init__(self, reason: str, *, advice: str | None = None) -> None:
        advice = advice or "It was left unchanged; restore it from a backup or delete the conversation to start over."
        super().__init__(f"The stored conversation {reason}. {advice}")


class StateVersionError(AgentHostError):
    """The stored state has a schema version this code cannot read. It is left exactly as it was."""

    codes = ("state_version_unsupported",)
    status = 422

    def __init__(self, found: object, supported: int) -> None:
        # A newer host may read a future version; nothing reads a missing, older or malformed one.
        start_over = "Restore it from a backup or delete the conversation to start over; nothing was changed."
        if found is None:
            problem, advice = "has no schemaVersion, so no version of this host wrote it", start_over
        elif type(found) is int and found > supported:
            problem = f"has schema version {found}; this host reads versions up to {supported}"
            advice = "Deploy a host version that knows it; nothing was changed."
        elif type(found) is int:
            problem = f"has schema version {found}, older than this host reads ({supported}), with no migration"
            advice = start_over
        else:
            problem, advice = f"has schema version {found!r}, which is not a version number", start_over
        super().__init__(f"The stored conversation {problem}. {advice}")


class TurnFailedError(AgentHostError):
    """The model or a tool failed during the turn (earlier history is unchanged), or the model's answer is not the
    structured output the turn asked for (`invalid_structured_output`; the answer is kept in the history)."""

    codes = ("turn_failed", "invalid_structured_output")
    status = 502

    def __init__(self, reason: str, *, code: str | None = None) -> None:
        after = (
            "The answer is kept in the conversation's history; the next turn can ask for a corrected one."
            if code == "invalid_structured_output"
            else "The conversation's earlier history is unchanged; send the next turn to continue."
        )
        super().__init__(f"{reason} {after}", code=code)


class StorageUnavailableError(AgentHostError):
    """The durable store could not be read or written; nothing the caller sent was lost or half-applied."""

    codes = ("storage_unavailable",)
    status = 503

    def __init__(self, detail: str) -> None:
        super().__init__(f"The durable store is unavailable ({detail}). Retry shortly; nothing was lost.")


class CancelNotRecordedError(StorageUnavailableError):
    """A cancel could not be written to (or read back from) the turn stream store, where the turn would see it."""

    def __init__(self, conversation_id: str, turn_id: str, failure: str, *, recorded: bool) -> None:
        """Describe one cancel that failed.

        Args:
            conversation_id: The conversation.
            turn_id: The turn the cancel was for.
            failure: What the store failed to do, as a clause (`StreamStoreUnavailableError.failure`).
            recorded: Whether the cancel request itself was written (only reading it back, or the turn's state, failed).
        """
        turn = f"Turn '{turn_id}' of conversation '{conversation_id}'"
        if recorded:
            message = (
                f"{turn} was asked to stop, but {failure}, so whether it is stopping is not known. Retry the cancel "
                "(the first request's keep holds) or read the turn."
            )
        else:
            message = (
                f"{turn} was not asked to stop: {failure}. The turn goes on as if no cancel had been sent; retry the "
                "cancel shortly."
            )
        AgentHostError.__init__(self, message)  # not the durable store's wording: this is the stream store's
        self.fields = {"conversationId": conversation_id, "turnId": turn_id}


_BUSY_RULE_RETRY = 'Retry shortly, or send "ifBusy": "enqueue", which runs the turn without that record.'


class BusyRuleUnavailableError(StorageUnavailableError):
    """A turn asking `ifBusy` other than `enqueue` could not read or record its place among the conversation's turns in
    flight in the turn stream store, so it was not taken."""

    def __init__(
        self, conversation_id: str, if_busy: str, failure: str, asked_to_stop: list[str], *, remedy: str | None = None
    ) -> None:
        """Describe one refused turn.

        Args:
            conversation_id: The conversation.
            if_busy: What the turn asked (`reject`, `interrupt`, `rollback`).
            failure: What the store failed to do, as a clause (`StreamStoreUnavailableError.failure`).
            asked_to_stop: Turns the request had already asked to stop before the store failed.
            remedy: What the caller can do; by default, retry or enqueue.
        """
        stopping = ""
        if asked_to_stop:
            stopping = f" Turn {', '.join(repr(t) for t in asked_to_stop)} had already been asked to stop, and stops."
        message = (
            f'The turn was not taken: "ifBusy": "{if_busy}" orders it among the turns in flight of conversation '
            f"'{conversation_id}', and {failure}. Nothing was stored for it and the model was not called.{stopping} "
            f"{remedy or _BUSY_RULE_RETRY}"
        )
        AgentHostError.__init__(self, message)  # not the durable store's wording: this is the stream store's
        self.fields = {"conversationId": conversation_id}


class StateCapacityExceededError(AgentHostError):
    """The conversation is over its byte budget and its retention mode may not delete enough."""

    codes = ("state_capacity_exceeded",)
    status = 507

    def __init__(
        self, conversation_id: str, size: int, budget: int, mode: str, *, protected: int | None = None
    ) -> None:
        if protected is None:
            # keep_all refuses before the model runs.
            message = (
                f"Conversation '{conversation_id}' would grow to {size} bytes, over its {budget}-byte budget "
                f"(maxStateBytes) under retention '{mode}', which never deletes. The turn was refused before the "
                "model ran and nothing was changed. Switch to retention 'auto' or 'follow_compaction', raise "
                "maxStateBytes, or start a new conversation."
            )
        else:
            message = (
                f"Conversation '{conversation_id}' stores {size} bytes, over its {budget}-byte budget (maxStateBytes) "
                f"under retention '{mode}', and {protected} bytes of it may never be evicted (system messages, the "
                "newest exchange, answers not yet delivered, the session). Nothing was deleted; the answer was "
                "delivered. Raise maxStateBytes or start a new conversation."
            )
        super().__init__(message)


def public_error_classes() -> Mapping[str, type[AgentHostError]]:
    """Every error class by name, for documentation and the public-API pin."""
    found: dict[str, type[AgentHostError]] = {"AgentHostError": AgentHostError}
    pending = list(AgentHostError.__subclasses__())
    while pending:
        cls = pending.pop()
        found[cls.__name__] = cls
        pending.extend(cls.__subclasses__())
    return found
