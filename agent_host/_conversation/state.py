"""The versioned conversation state an entity stores, and the refusal of state this code cannot read.

The pydantic models here are the schema (checked in as `tests/data/conversation_state.schema.json`);
the entity works on plain JSON-shaped dicts decoded once per operation, validated against these models.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from .._errors import StateCorruptError, StateVersionError
from .history import ASSISTANT_ROLE, author_field

# Version 1: flat message list with ids and compaction annotations, the serialized session,
# retention settings and truncation record, and turn records keyed by turn id.
# Version 2: the agent's own name is implied on its assistant messages, and a turn record names the transcript
# messages holding its answer instead of copying them. Version 1 state is upgraded on read.
SCHEMA_VERSION = 2
SCHEMA_VERSION_KEY = "schemaVersion"

RetentionModeName = Literal["keep_all", "auto", "follow_compaction"]


class _StateModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class StoredMessage(_StateModel):
    """One message of the transcript. `text` is shorthand for a single plain text content."""

    id: str = Field(description="Stable message id: the model's own, or derived from the turn id and position.")
    role: str
    text: str | None = None
    contents: list[dict[str, Any]] | None = Field(default=None, description="Content.to_dict() of each content.")
    props: dict[str, Any] | None = Field(
        default=None, description="Message.additional_properties, where compaction keeps its annotations."
    )
    author: str | None = Field(
        default=None,
        description=(
            "The author name. Omitted on an assistant message written by the conversation's agent (`agent`), "
            "null on an assistant message without one."
        ),
    )
    at: int = Field(description="When the message was stored, milliseconds since the Unix epoch.")


class ErrorRecord(_StateModel):
    """Why a turn failed: a stable code and a message fit to show a user."""

    code: str
    message: str


class ApprovalRequest(_StateModel):
    """A tool call waiting for the caller's approval, as a caller sees it."""

    id: str
    tool_name: str
    arguments: Any = None


class PendingApproval(ApprovalRequest):
    """A pending approval as stored: with the core request content, to answer it after a cold start."""

    request: dict[str, Any]


class TurnRecord(_StateModel):
    """The delivery record of one turn: what its caller reads, independent of the transcript."""

    status: Literal["completed", "failed"]
    idempotency_key: str | None = None
    request_hash: str | None = None
    alias_of: str | None = Field(default=None, description="A retry answered by this earlier turn.")
    text: str | None = None
    messages: list[str | StoredMessage] = Field(
        default_factory=list,
        description=(
            "The answer. A string is the id of a transcript message that holds it exactly as delivered; it is "
            "copied here before the transcript changes or deletes that message."
        ),
    )
    usage: dict[str, Any] | None = None
    approval_requests: list[ApprovalRequest] | None = None
    error: ErrorRecord | None = None
    at: int


class RetentionSettings(_StateModel):
    """How much this conversation may store and what may be deleted to stay under it."""

    mode: RetentionModeName = "auto"
    max_state_bytes: int = Field(default=1024 * 1024, gt=0)
    high_watermark: float = Field(default=0.85, gt=0, le=1)
    low_watermark: float = Field(default=0.70, gt=0, lt=1)


class TruncationRecord(_StateModel):
    """What retention has deleted from this conversation so far."""

    evicted_messages: int = 0
    first_evicted_at: int | None = None
    last_evicted_at: int | None = None


class ConversationState(_StateModel):
    """Everything one conversation entity stores."""

    schema_version: Literal[2] = SCHEMA_VERSION
    agent: str
    conversation_id: str
    created_at: int
    updated_at: int
    turn_count: int = 0
    messages: list[StoredMessage] = Field(default_factory=list)
    session: dict[str, Any] | None = Field(
        default=None, description="AgentSession.to_dict() without the durable history slice."
    )
    pending_approvals: list[PendingApproval] = Field(default_factory=list)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    truncation: TruncationRecord = Field(default_factory=TruncationRecord)
    turns: dict[str, TurnRecord] = Field(default_factory=dict)
    expired_turns: list[str] = Field(
        default_factory=list, description="Ids of the most recent turns whose records were dropped (answer 410)."
    )
    capacity_error: ErrorRecord | None = None


def decode_state(raw: str | dict[str, Any]) -> dict[str, Any]:
    """Decode and validate stored state; refuse anything this code cannot read.

    Raises:
        StateCorruptError: the state is not valid JSON or does not match the schema.
        StateVersionError: the state has a schema version this code cannot read (version 1 is upgraded).
    """
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise StateCorruptError(
            f"The stored conversation is not valid JSON ({exc}). It was left unchanged; restore it from a backup "
            "or delete the conversation to start over."
        ) from None
    if not isinstance(data, dict):
        raise StateCorruptError("The stored conversation is not a JSON object. It was left unchanged.")
    version = data.get(SCHEMA_VERSION_KEY)
    if version == 1 and type(version) is int:
        data = _upgraded_from_v1(data)
    elif version != SCHEMA_VERSION or type(version) is not int:
        raise StateVersionError(version, SCHEMA_VERSION)
    try:
        if _plainly_valid_messages(data.get("messages")):
            # The transcript is most of the state and already has exactly the schema's types: validate the rest.
            ConversationState.model_validate({**data, "messages": []})
        else:
            ConversationState.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise StateCorruptError(
            f"The stored conversation does not match schema version {SCHEMA_VERSION} at '{where}': {first['msg']}. "
            "It was left unchanged."
        ) from None
    _check_named_answers(data)
    return data


def _check_named_answers(data: dict[str, Any]) -> None:
    """Refuse turn records that name messages the transcript does not hold."""
    named = {
        (turn_id, message)
        for turn_id, turn in data.get("turns", {}).items()
        for message in turn.get("messages", ())
        if isinstance(message, str)
    }
    if not named:
        return
    held = {record["id"] for record in data.get("messages", ())}
    for turn_id, message in sorted(named):
        if message not in held:
            raise StateCorruptError(
                f"The stored conversation does not match schema version {SCHEMA_VERSION} at "
                f"'turns.{turn_id}.messages': it names message {message!r}, which the transcript does not hold. "
                "It was left unchanged."
            )


def _upgraded_from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 state in version 2's form: every author was explicit, and turn records copied their answers.

    Anything malformed is left as it is, for validation to name.
    """
    agent = data.get("agent")

    def upgraded(record: Any) -> Any:
        if not isinstance(record, dict) or record.get("role") != ASSISTANT_ROLE:
            return record
        kept = {key: value for key, value in record.items() if key != "author"}
        return {**kept, **author_field(ASSISTANT_ROLE, record.get("author"), agent)}

    new = {**data, SCHEMA_VERSION_KEY: SCHEMA_VERSION}
    if isinstance(data.get("messages"), list):
        new["messages"] = [upgraded(record) for record in data["messages"]]
    if isinstance(data.get("turns"), dict):
        new["turns"] = {
            turn_id: {**turn, "messages": [upgraded(m) for m in turn["messages"]]}
            if isinstance(turn, dict) and isinstance(turn.get("messages"), list)
            else turn
            for turn_id, turn in data["turns"].items()
        }
    return new


# Each stored message field and the one type it has when written by this code (None allowed where not required).
_MESSAGE_TYPES: dict[str, type] = {
    "id": str,
    "role": str,
    "text": str,
    "contents": list,
    "props": dict,
    "author": str,
    "at": int,
}
_REQUIRED_MESSAGE_FIELDS = ("id", "role", "at")


def _plainly_valid_messages(messages: object) -> bool:
    """Whether every stored message has exactly the types `StoredMessage` wants, with nothing to coerce.

    A quick check that only accepts what the schema accepts: anything else (a missing field, an unknown one, a
    value the schema would coerce or refuse) goes to the full validation, which gives the precise error.
    """
    if type(messages) is not list:
        return False
    for record in messages:
        if type(record) is not dict:
            return False
        for name in _REQUIRED_MESSAGE_FIELDS:
            if name not in record:
                return False
        for name, value in record.items():
            expected = _MESSAGE_TYPES.get(name)
            if expected is None:
                return False
            if type(value) is not expected and (value is not None or name in _REQUIRED_MESSAGE_FIELDS):
                return False
        contents = record.get("contents")
        if contents is not None and any(type(content) is not dict for content in contents):
            return False
    return True


def new_state(agent: str, conversation_id: str, retention: RetentionSettings, now_ms: int) -> dict[str, Any]:
    """A conversation that has run no turn yet, as the JSON-shaped dict the entity stores."""
    return ConversationState(
        agent=agent,
        conversation_id=conversation_id,
        created_at=now_ms,
        updated_at=now_ms,
        retention=retention,
    ).model_dump(by_alias=True, exclude_none=True, mode="json")


def encode_state(state: dict[str, Any]) -> str:
    """The exact string the entity stores (and the bytes retention measures)."""
    return json.dumps(state, separators=(",", ":"), ensure_ascii=False)


def state_json_schema() -> dict[str, Any]:
    """The JSON Schema of the stored state, as checked in under tests/data."""
    return ConversationState.model_json_schema(by_alias=True)
