"""The wire contract: request bodies (camelCase on the wire), entity operation inputs, ids, and their validation.

Every body a caller or a signal sends is a pydantic model here; `parse_model` is the one place a failed
validation becomes an `InvalidRequestError` naming the fields. Knows the wire format, not how anything is stored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ._approval_ttl import approval_ttl_problem
from ._errors import InvalidRequestError
from ._owners import Owners
from ._retention_settings import (
    MAX_STATE_BYTES_CEILING,
    MIN_STATE_BYTES,
    RetentionChange,
    RetentionModeName,
    SettableStateBytes,
)
from ._structured_output import response_format_of
from ._turn_options import chat_options_of, message_contents

MAX_CONVERSATION_ID_LENGTH = 128
CONVERSATION_ID_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_CONVERSATION_ID_LENGTH - 1}}}")
# The Durable Task Scheduler caps instance ids at 100 characters, and an entity's instance id is
# `@<entity name>@<key>` (docs/scaling.md): there, a conversation id gets what the agent's entity name leaves.
SCHEDULER_MAX_INSTANCE_ID_LENGTH = 100
# The longest conversation id the host makes up itself (an orchestration's `new_uuid()`), which must always fit.
LONGEST_GENERATED_CONVERSATION_ID = 36
TURN_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Anchored: pydantic's `pattern` matches anywhere in the string unless told otherwise.
CHANGE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
MAX_APPROVALS_PER_TURN = 32
# The most a `run` operation asked for its reply returns, in UTF-8 bytes of its JSON. The result travels back to an
# orchestration in its history and through the host's queues, and an oversized operation result can make the host
# fail the whole batch and roll back the entity state (microsoft/agent-framework#3884). Past this, the turn is
# still recorded and the reply says how large it was instead of carrying the answer.
MAX_REPLY_BYTES = 32 * 1024
# Run options the host decides: who keeps the history is settled at registration (architecture.md, failure 10).
HOST_OWNED_RUN_OPTIONS = ("store", "conversation_id")

# The operations a conversation entity runs; the HTTP side signals them and knows nothing else of the entity.
RUN_OPERATION = "run"
DELETE_OPERATION = "delete"
SET_RETENTION_OPERATION = "set_retention"
# Only the conversation's expiry orchestration calls this one (docs/retention.md, "Idle conversations expire").
EXPIRE_OPERATION = "expire_if_idle"
CANCEL_OPERATION = "cancel"
ENTITY_OPERATIONS = (RUN_OPERATION, DELETE_OPERATION, SET_RETENTION_OPERATION, EXPIRE_OPERATION, CANCEL_OPERATION)

CancelKeep = Literal["partial", "nothing"]
"""What a cancelled turn that already ran keeps: its partial answer (marked), or nothing at all."""
CANCEL_KEEPS: tuple[CancelKeep, ...] = ("partial", "nothing")
IfBusy = Literal["enqueue", "reject", "interrupt", "rollback"]
"""What a new turn does to a conversation that has a turn in flight (`POST .../turns`, `ifBusy`)."""
IF_BUSY_MODES: tuple[IfBusy, ...] = ("enqueue", "reject", "interrupt", "rollback")

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class AgentRoute:
    """What the HTTP side knows about a registered agent: its name, its entity's name, who keeps its history."""

    name: str
    entity_name: str
    history: str
    # How long the agent's conversations may stay idle before they are deleted (0: never), so whoever takes a
    # conversation's turn can have its expiry watched.
    conversation_ttl_seconds: float = 0.0
    # The agent object's class name, and whether its `/api/agents/{name}/...` routes and its MCP tool are served
    # (an agent without HTTP routes stays callable from orchestrations and MCP), as the health route reports them.
    agent_type: str = "Agent"
    http_enabled: bool = True
    mcp_enabled: bool = False
    # The published host's entity a new conversation's history is imported from (docs/migrating.md), or None.
    published_entity: str | None = None
    # The longest conversation id the backend can key an entity of this agent by (shorter on the scheduler).
    max_conversation_id_length: int = MAX_CONVERSATION_ID_LENGTH
    # Who owns the agent's conversations (the app's `conversation_owners`), or None: every caller reaches every one.
    owners: Owners | None = None


def conversation_id_limit(entity_name: str, *, durable_task_scheduler: bool) -> int:
    """The longest conversation id an agent's entity can be keyed by on the app's Durable Functions backend."""
    if not durable_task_scheduler:
        return MAX_CONVERSATION_ID_LENGTH
    return min(MAX_CONVERSATION_ID_LENGTH, SCHEDULER_MAX_INSTANCE_ID_LENGTH - len(f"@{entity_name}@"))


class WireModel(BaseModel):
    """A body on the wire: camelCase names, unknown fields refused.

    `error_code` is the code of a malformed body; `field_codes` gives some fields a code of their own for a value
    that has the right type but is out of range (every error of a query parameter, whose type is always text).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    error_code: ClassVar[str] = "invalid_body"
    field_codes: ClassVar[dict[str, str]] = {}
    lenient_types: ClassVar[bool] = False
    shape: ClassVar[str] = ""


def parse_model(model: type[ModelT], data: Any, **context: Any) -> ModelT:
    """Validate `data` as `model`, or raise the model's error naming every problem and the expected shape.

    `model` is a `WireModel` (or carries the same class attributes); `context` reaches its validators.

    Raises:
        InvalidRequestError: with the model's code, or a field's own code for that field's problem.
    """
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        code = getattr(model, "field_codes", {}).get(field)
        if code is None or not (getattr(model, "lenient_types", False) or _is_value_error(first["type"])):
            code = getattr(model, "error_code", WireModel.error_code)
        shape = getattr(model, "shape", "")
        expected = f" Expected {shape}." if shape else ""
        raise InvalidRequestError(f"The request is not valid: {describe_problems(exc)}.{expected}", code=code) from None


def describe_problems(error: ValidationError, names: Mapping[str, str] | None = None) -> str:
    """Every problem of a failed validation, each under the name the caller knows the field by.

    Args:
        error: What pydantic raised.
        names: The caller's name for a field, by attribute or wire name (an app setting's variable, say);
            fields not named here go by their wire name.
    """
    names = names or {}
    problems = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        field = str(item["loc"][0]) if item["loc"] else ""
        where = names.get(field) or names.get(_snake(field)) or path or "body"
        message = item["msg"].removeprefix("Value error, ")
        shown = f" (got {item['input']!r})" if item["loc"] and item["type"] != "missing" else ""
        problems.append(f"{where}: {message}{shown}")
    return "; ".join(problems)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _is_value_error(error_type: str) -> bool:
    """Whether pydantic refused a value of the right type (out of range, too long), not a value of the wrong type."""
    return not (error_type.endswith("_type") or error_type in {"missing", "extra_forbidden", "literal_error"})


class ApprovalAnswer(WireModel):
    """The caller's answer to one pending tool approval."""

    id: StrictStr
    approved: StrictBool


def _check_timeout(value: float | None, info: ValidationInfo) -> float | None:
    maximum = (info.context or {}).get("max_wait_seconds", math.inf)
    if value is not None and not (math.isfinite(value) and 0 < value <= maximum):
        raise ValueError(f"timeoutSeconds must be more than 0 and at most {maximum:g}")
    return value


def _check_approval_ttl(value: float | None) -> float | None:
    problem = None if value is None else approval_ttl_problem(value)
    if problem is not None:
        raise ValueError(f"approvalTtlSeconds {problem}")
    return value


def _one_of(allowed: tuple[str, ...], name: str) -> Any:
    """A validator refusing a value outside `allowed` with a message that lists them."""

    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}")
        return value

    return check


def _check_response_format(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A response format as core's chat-style form, checked (`_structured_output.response_format_of`)."""
    return None if value is None else response_format_of(value)


class TurnRequest(WireModel):
    """Body of `POST .../turns`: a message (text or contents), answers to pending approvals, or both; how long to
    wait; and what the turn asks of the model: structured output, chat options."""

    field_codes = {
        "": "missing_message",
        "message": "missing_message",
        "approvals": "too_many_approvals",
        "timeoutSeconds": "invalid_timeout",
        "responseFormat": "invalid_response_format",
        "options": "invalid_options",
        "contents": "invalid_contents",
        "approvalTtlSeconds": "invalid_approval_ttl",
        "ifBusy": "invalid_request",
    }
    shape = (
        '{"message": string, "approvals": [{"id": string, "approved": boolean}], "wait": boolean, '
        '"timeoutSeconds": number, "stream": boolean, "contents": [{"type": "text" | "uri" | "data", ...}], '
        '"responseFormat": {JSON schema}, "options": {"temperature": number, ...}, "approvalTtlSeconds": number, '
        '"ifBusy": "enqueue" | "reject" | "interrupt" | "rollback"}'
    )

    message: StrictStr | None = None
    # The message as contents in core's shape (text, a file by URL or as a data URI), in place of `message`.
    contents: list[Any] | None = None
    approvals: list[ApprovalAnswer] | None = Field(default=None, max_length=MAX_APPROVALS_PER_TURN)
    wait: StrictBool = True
    timeout_seconds: StrictInt | StrictFloat | None = None
    # Run the turn streaming so its stream can be watched (`GET .../turns/{turnId}/stream`) while it runs;
    # `Accept: text/event-stream` implies it.
    stream: StrictBool = False
    # A JSON schema (or core's chat-style form): the answer must be JSON matching it; its parsed value is returned.
    response_format: dict[str, Any] | None = None
    # Chat options for this turn, on an allow-list (`_turn_options.CHAT_OPTIONS`), as core's option names.
    options: dict[str, Any] | None = None
    # How long the tool approvals this turn asks for wait for their answer (0: until answered); the agent's
    # `approval_ttl` otherwise.
    approval_ttl_seconds: StrictInt | StrictFloat | None = None
    # What the turn does to a turn of the conversation still in flight (docs/http.md).
    if_busy: StrictStr = "enqueue"

    _timeout = field_validator("timeout_seconds")(_check_timeout)
    _response_format = field_validator("response_format")(_check_response_format)
    _approval_ttl = field_validator("approval_ttl_seconds")(_check_approval_ttl)
    _if_busy = field_validator("if_busy")(_one_of(IF_BUSY_MODES, "ifBusy"))

    @field_validator("options")
    @classmethod
    def _chat_options(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else chat_options_of(value)

    @field_validator("contents")
    @classmethod
    def _message_contents(cls, value: list[Any] | None, info: ValidationInfo) -> list[dict[str, Any]] | None:
        if value is not None and info.data.get("message") is not None:
            raise ValueError('send the message as "message" (text) or as "contents", not both')
        return None if value is None else message_contents(value)

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the message is empty; send some text")
        return value

    def asked(self) -> dict[str, Any]:
        """What the turn asks, as the entity's `run` operation's fields; a retry of its key must ask the same, so
        what it asks of the model (structured output, options) is part of it."""
        operation: dict[str, Any] = {"message": self.message}
        if self.contents is not None:
            operation["contents"] = self.contents
        if self.approvals:
            operation["approvals"] = [answer.model_dump() for answer in self.approvals]
        if self.response_format is not None:
            operation["responseFormat"] = self.response_format
        if self.options is not None:
            operation["options"] = self.options
        if self.approval_ttl_seconds is not None:
            operation["approvalTtlSeconds"] = self.approval_ttl_seconds
        return operation

    @model_validator(mode="after")
    def _something_to_do(self) -> Self:
        if self.message is None and self.contents is None and not self.approvals:
            raise ValueError(
                'the body has no message; send {"message": "..."} or answers to pending approvals '
                '({"approvals": [{"id": "...", "approved": true}]})'
            )
        return self


class CancelRequest(WireModel):
    """Body of `POST .../turns/{turnId}/cancel` (optional): what a running turn keeps, and how long to wait."""

    field_codes = {"keep": "invalid_request", "timeoutSeconds": "invalid_timeout"}
    shape = '{"keep": "partial" | "nothing", "wait": boolean, "timeoutSeconds": number}'

    keep: StrictStr = "partial"
    wait: StrictBool = True
    timeout_seconds: StrictInt | StrictFloat | None = None

    _timeout = field_validator("timeout_seconds")(_check_timeout)
    _keep = field_validator("keep")(_one_of(CANCEL_KEEPS, "keep"))


class TurnQuery(WireModel):
    """Query parameters of a `text/plain` turn request (`?wait=false&timeoutSeconds=5`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")
    error_code = "invalid_query"
    field_codes = {"timeoutSeconds": "invalid_timeout"}
    lenient_types = True

    wait: bool = True
    timeout_seconds: float | None = None
    stream: bool = False

    _timeout = field_validator("timeout_seconds")(_check_timeout)


class MessagesQuery(WireModel):
    """Query parameters of `GET .../messages`."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")
    error_code = "invalid_query"
    lenient_types = True

    include_excluded: bool = False


class RetentionRequest(RetentionChange):
    """Body of `PUT .../retention`: the one retention model, with the mode and budget required (a PUT replaces the
    conversation's settings; omitted watermarks take their defaults), refused with `invalid_retention`."""

    mode: RetentionModeName
    max_state_bytes: SettableStateBytes

    error_code: ClassVar[str] = "invalid_retention"
    field_codes: ClassVar[dict[str, str]] = {}
    lenient_types: ClassVar[bool] = False
    shape: ClassVar[str] = (
        f'{{"mode": "keep_all" | "auto" | "follow_compaction", "maxStateBytes": integer {MIN_STATE_BYTES} to '
        f"{MAX_STATE_BYTES_CEILING}, "
        '"highWatermark": number, "lowWatermark": number}'
    )


class RunRequestBody(WireModel):
    """A JSON body of the agent-framework-azurefunctions `POST .../run` route: its snake_case names and the camelCase
    ones that host is moving to (`*_camel` here), unknown fields ignored as that host ignores them."""

    model_config = ConfigDict(alias_generator=None, populate_by_name=False, extra="ignore")

    message: StrictStr = ""
    session_id: StrictStr | None = None
    session_id_camel: StrictStr | None = Field(default=None, alias="sessionId")
    thread_id: StrictStr | None = None
    thread_id_camel: StrictStr | None = Field(default=None, alias="threadId")
    # Read like that host reads them: a boolean, a number, or a word such as "true" or "no".
    wait_for_response: Any = None
    wait_for_response_camel: Any = Field(default=None, alias="waitForResponse")
    enable_tool_calls: Any = None
    enable_tool_calls_camel: Any = Field(default=None, alias="enableToolCalls")
    # A JSON schema (or core's chat-style `{"type": "json_schema", ...}` form): the answer is structured output.
    response_format: Any = None
    response_format_camel: Any = Field(default=None, alias="responseFormat")
    role: Any = None


class ImportedConversation(BaseModel):
    """A conversation imported from agent-framework-azurefunctions: its messages as our stored records, and an
    account of where they came from (`entity`, `schemaVersion`, `entries`, `messages`, `skipped`)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]]
    source: dict[str, Any]


class RunOperation(BaseModel):
    """Input of the entity's `run` operation."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    turn_id: str = Field(pattern=f"^{TURN_ID_PATTERN.pattern}$")
    message: str | None = None
    approvals: list[ApprovalAnswer] = Field(default_factory=list)
    idempotency_key: str | None = None
    request_hash: str | None = None
    # Return the answer in the operation's result (an orchestration's `call_entity` reads nothing else), bounded by
    # MAX_REPLY_BYTES; without it the result only names the turn and its status.
    reply: StrictBool = False
    # Options for this run's `agent.run(options=...)`, as JSON: a structured-output schema, a temperature.
    options: dict[str, Any] | None = None
    # Whole input messages (core's `Message.to_dict()` form) in place of `message`: a workflow's agent node receives
    # the upstream conversation with its roles, tool calls, non-text content and ids (docs/workflows.md, L3-2).
    messages: list[dict[str, Any]] | None = None
    # Run the agent streaming and write the turn's stream (agent_host/_streaming); the stored outcome is the same.
    stream: bool = False
    # Structured output, as core's chat-style response format: the answer must be JSON that matches its schema, or
    # the turn fails (`invalid_structured_output`) with the answer kept in the history.
    response_format: dict[str, Any] | None = None
    # False: the turn runs with none of the agent's tools (agent-framework-azurefunctions' `enable_tool_calls`).
    enable_tool_calls: StrictBool = True
    # The role of the turn's message (the `/run` route's `role`).
    role: Literal["user", "system", "assistant"] = "user"
    # The turn's message as contents in core's `Content.to_dict()` form (text, images by URI or data), in place of
    # `message`.
    contents: list[dict[str, Any]] | None = None
    # The caller's principal (with `conversation_owners` on): a new conversation records it as its owner, and a
    # conversation owned by another is left untouched.
    owner: str | None = None
    # The conversation agent-framework-azurefunctions stored under the same id, to start from when nothing is
    # stored here yet (docs/migrating.md): ignored by a conversation that exists, or existed and was deleted.
    imported: ImportedConversation | None = None
    # The caller's W3C trace context (`traceparent`, `tracestate`): the operation's span continues the caller's trace
    # across the durable hop (docs/observability.md). Optional, so inputs sent before it existed still parse.
    trace_context: dict[str, str] | None = None
    # The lifetime of the approvals this turn asks for, in place of the agent's (0: they wait until answered).
    approval_ttl_seconds: StrictInt | StrictFloat | None = None

    _approval_ttl = field_validator("approval_ttl_seconds")(_check_approval_ttl)

    @model_validator(mode="after")
    def _one_kind_of_input(self) -> Self:
        given = [name for name in ("message", "messages", "contents") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(
                f"send one of message (text), contents (one message's contents) or messages (whole messages), not "
                f"{' and '.join(given)}"
            )
        if self.response_format is not None and "response_format" in (self.options or {}):
            raise ValueError("send the response format once: as responseFormat, not also in options")
        return self

    _response_format = field_validator("response_format")(_check_response_format)

    @field_validator("contents")
    @classmethod
    def _checked_contents(cls, contents: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        # The entity is the authority, whoever signals it: the same checks as the turn route's.
        return None if contents is None else message_contents(contents)

    @field_validator("options")
    @classmethod
    def _options_the_caller_may_set(cls, options: dict[str, Any] | None) -> dict[str, Any] | None:
        if options is None:
            return None
        owned = [name for name in HOST_OWNED_RUN_OPTIONS if name in options]
        if owned:
            raise ValueError(
                f"run options {', '.join(owned)} are decided by the host when the agent is registered; leave them out"
            )
        if not isinstance(options.get("response_format", {}), dict):
            raise ValueError("response_format must be a JSON schema object; a class cannot cross the entity boundary")
        return options


class RunReply(BaseModel):
    """Result of the entity's `run` operation when the caller asked for the reply (`RunOperation.reply`).

    `messages` are the answer's stored message records (`_records.py`), omitted when the reply would be over
    MAX_REPLY_BYTES: `reply_bytes` then says how large it was. A failed turn carries its `error`.
    """

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    turn_id: str
    status: Literal["completed", "failed", "cancelled", "expired"]
    duplicate: bool = False
    at: int | None = None
    messages: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    error: dict[str, str] | None = None
    reply_bytes: int | None = None


class ChangeOperation(BaseModel):
    """Input of the entity's `delete` operation: the request's id, acknowledged in the state when applied."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    change_id: str = Field(pattern=CHANGE_ID_PATTERN)


class CancelOperation(BaseModel):
    """Input of the entity's `cancel` operation: the turn, and what it keeps if it ran."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    turn_id: str = Field(pattern=f"^{TURN_ID_PATTERN.pattern}$")
    keep: CancelKeep = "partial"


class SetRetentionOperation(ChangeOperation):
    """Input of the entity's `set_retention` operation."""

    retention: RetentionChange
    # As the `run` operation's: a retention change may create the conversation.
    owner: str | None = None


class ExpireOperation(BaseModel):
    """Input of the entity's `expire_if_idle` operation: the expiry orchestration's time and the TTL to apply.

    The time is the orchestration's (`current_utc_datetime`), never the entity's own clock. The TTL is the app's
    setting when the check runs (0: expiry is off now, so nothing is deleted and the orchestration ends).
    """

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    now_ms: StrictInt = Field(ge=0)
    ttl_seconds: StrictFloat | StrictInt = Field(ge=0, allow_inf_nan=False)


def validate_conversation_id(conversation_id: str, route: AgentRoute | None = None) -> str:
    """Accept ids of 1-128 characters from `[A-Za-z0-9._-]`, starting with a letter or digit and without '..', and
    (given the agent's `route`) no longer than its entities can be keyed by on the app's backend.

    Raises:
        InvalidRequestError: with code `invalid_conversation_id`.
    """
    shown = conversation_id if len(conversation_id) <= 140 else conversation_id[:140] + "..."
    if not CONVERSATION_ID_PATTERN.fullmatch(conversation_id) or ".." in conversation_id:
        raise InvalidRequestError(
            f"Conversation id {shown!r} is invalid: use 1-{MAX_CONVERSATION_ID_LENGTH} characters from "
            "A-Z a-z 0-9 . _ -, starting with a letter or digit, without '..'.",
            code="invalid_conversation_id",
        )
    if route is not None and len(conversation_id) > route.max_conversation_id_length:
        raise InvalidRequestError(
            f"Conversation id {shown!r} is {len(conversation_id)} characters; agent '{route.name}' takes at most "
            f"{route.max_conversation_id_length} on the Durable Task Scheduler, which caps an entity's id "
            f"('@{route.entity_name}@' and the conversation id) at {SCHEDULER_MAX_INSTANCE_ID_LENGTH} characters. "
            "Use a shorter id, for example a hash of yours.",
            code="invalid_conversation_id",
        )
    return conversation_id


def validate_turn_id(turn_id: str) -> str:
    """Accept turn ids as the host issues them.

    Raises:
        InvalidRequestError: with code `invalid_turn_id`.
    """
    if not TURN_ID_PATTERN.fullmatch(turn_id):
        raise InvalidRequestError(
            f"Turn id {turn_id[:80]!r} is invalid: use the turnId a turn request returned.", code="invalid_turn_id"
        )
    return turn_id
