"""Errors a request or a stored conversation can fail with, each with a stable code and HTTP status.

AgentHostError
 ├── InvalidRequestError            400  the request is malformed; fix the request
 ├── AgentNotFoundError             404  no agent of that name is registered
 ├── ConversationNotFoundError      404  the conversation has never run a turn (or was deleted)
 ├── TurnNotFoundError              404  the turn id was never seen in this conversation
 ├── MethodNotAllowedError          405  the route exists but not for that method
 ├── IdempotencyConflictError       409  an Idempotency-Key was reused with a different body
 ├── TurnExpiredError               410  the turn ran, but its result aged out of the delivery records
 ├── MessageTooLargeError           413  the message is over the configured size limit
 ├── UnsupportedMediaTypeError      415  the body is neither JSON nor plain text
 ├── StateCorruptError              422  the stored state cannot be read; it is left untouched
 ├── StateVersionError              422  the stored state has a schema version this code does not know
 ├── StateCapacityExceededError     507  the conversation is over its byte budget
 └── TurnFailedError                502  the model or a tool failed during the turn

The entity stores `{"code", "message"}` for a failed turn; HTTP rendering lives in `_routes.py` alone.
"""

from __future__ import annotations

from typing import ClassVar


class AgentHostError(Exception):
    """Base class: an error with a stable machine-readable code and an HTTP status."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields: dict[str, str] = {}
        if code is not None:
            self.code = code  # type: ignore[misc]

    def to_record(self) -> dict[str, str]:
        """The error as stored in a turn record and rendered in an error body."""
        return {"code": self.code, "message": self.message}


class InvalidRequestError(AgentHostError):
    """The request body, a parameter or a header is malformed."""

    code = "invalid_request"
    status = 400


class AgentNotFoundError(AgentHostError):
    """No agent with this name is registered on the app."""

    code = "agent_not_found"
    status = 404

    def __init__(self, agent: str, known: list[str]) -> None:
        super().__init__(f"No agent named '{agent}' is registered. Known agents: {', '.join(known) or 'none'}.")


class ConversationNotFoundError(AgentHostError):
    """The conversation does not exist (no turn ran yet, or it was deleted)."""

    code = "conversation_not_found"
    status = 404

    def __init__(self, agent: str, conversation_id: str) -> None:
        super().__init__(
            f"Conversation '{conversation_id}' of agent '{agent}' does not exist. "
            "Start it by posting a turn to .../turns."
        )


class TurnNotFoundError(AgentHostError):
    """The turn id was never seen in this conversation."""

    code = "turn_not_found"
    status = 404

    def __init__(self, conversation_id: str, turn_id: str) -> None:
        super().__init__(f"Turn '{turn_id}' is unknown in conversation '{conversation_id}'.")


class MethodNotAllowedError(AgentHostError):
    """The route exists but does not accept this HTTP method."""

    code = "method_not_allowed"
    status = 405


class IdempotencyConflictError(AgentHostError):
    """An Idempotency-Key was reused with a different request body."""

    code = "idempotency_key_reused"
    status = 409

    def __init__(self, key: str, original_turn_id: str) -> None:
        super().__init__(
            f"Idempotency-Key {key!r} was already used for turn '{original_turn_id}' with a different request. "
            "Use a new key for a new request."
        )


class TurnExpiredError(AgentHostError):
    """The turn completed, but its result is older than the delivery records keep."""

    code = "turn_expired"
    status = 410

    def __init__(self, message: str, *, conversation_id: str, turn_id: str) -> None:
        super().__init__(message)
        self.fields = {"conversationId": conversation_id, "turnId": turn_id, "status": "expired"}


class MessageTooLargeError(AgentHostError):
    """The message or the body is over the configured size limit."""

    code = "message_too_large"
    status = 413

    def __init__(self, size: int, limit: int, what: str = "message") -> None:
        super().__init__(
            f"The {what} is {size} bytes, over the limit of {limit} bytes (AGENT_HOST_MAX_MESSAGE_BYTES). "
            "Send a shorter message."
        )


class UnsupportedMediaTypeError(AgentHostError):
    """The body is neither JSON nor plain text."""

    code = "unsupported_media_type"
    status = 415


class StateCorruptError(AgentHostError):
    """The stored conversation state cannot be read. It is left exactly as it was."""

    code = "state_corrupt"
    status = 422


class StateVersionError(AgentHostError):
    """The stored state has a schema version this code cannot read. It is left exactly as it was."""

    code = "state_version_unsupported"
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


class StateCapacityExceededError(AgentHostError):
    """The conversation is over its byte budget and the retention mode may not delete enough."""

    code = "state_capacity_exceeded"
    status = 507


class TurnFailedError(AgentHostError):
    """The model or a tool failed during the turn; earlier history is unchanged."""

    code = "turn_failed"
    status = 502


def status_for_code(code: str) -> int:
    """The HTTP status of an error code stored in a turn record (500 for codes this version does not know)."""
    pending = list(AgentHostError.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.code == code:
            return cls.status
        pending.extend(cls.__subclasses__())
    return AgentHostError.status
