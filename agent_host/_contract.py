"""The HTTP contract: request bodies (camelCase on the wire) and the rendering of stored records as responses.

Knows the wire format, not how the entity stores history beyond the record shapes in `_state`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent_framework import (
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    GROUP_ID_KEY,
    GROUP_KIND_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
)
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from ._conversation.history import record_author
from ._errors import InvalidRequestError, MessageTooLargeError

CONVERSATION_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TURN_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class AgentRoute:
    """What the HTTP side knows about a registered agent: its name, its entity's name, who keeps its history."""

    name: str
    entity_name: str
    history: str


class _WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ApprovalAnswer(_WireModel):
    """The caller's answer to one pending tool approval."""

    id: StrictStr
    approved: StrictBool


class TurnRequest(_WireModel):
    """Body of `POST .../turns`: a message, answers to pending approvals, or both."""

    message: StrictStr | None = None
    approvals: list[ApprovalAnswer] | None = None
    wait: StrictBool = True
    timeout_seconds: StrictInt | StrictFloat | None = Field(default=None)


def read_body_text(body: bytes, max_message_bytes: int) -> str:
    """A request body as text, refused when it is larger than any valid turn could be or not UTF-8.

    Raises:
        MessageTooLargeError: the body is over six times the message limit (JSON escaping can grow a message
            six-fold) plus room for the other fields.
        InvalidRequestError: the body is not UTF-8 (code `invalid_encoding`).
    """
    limit = max_message_bytes * 6 + 4096
    if len(body) > limit:
        raise MessageTooLargeError(len(body), limit, what="request body")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(
            f"The body is not valid UTF-8 (byte {exc.start}). Send UTF-8 text.", code="invalid_encoding"
        ) from None


def parse_json_object(text: str, expected: str) -> dict[str, Any]:
    """The JSON object a body holds; `expected` shows the caller what shape to send.

    Raises:
        InvalidRequestError: not JSON, nested deeper than the parser goes, or not an object (code `invalid_json`);
            a string holding an unpaired surrogate (code `invalid_body`).
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
        raise InvalidRequestError(f"The body is not valid JSON: {exc}.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(
            f"The body must be a JSON object like {expected}, got {type(data).__name__}.", code="invalid_json"
        )
    refuse_unpaired_surrogates(data)
    return data


def validate_conversation_id(conversation_id: str) -> str:
    """Accept ids of 1-128 characters from `[A-Za-z0-9._-]`, starting with a letter or digit and without '..'.

    Raises:
        InvalidRequestError: with code `invalid_conversation_id`.
    """
    if not CONVERSATION_ID_PATTERN.fullmatch(conversation_id) or ".." in conversation_id:
        shown = conversation_id if len(conversation_id) <= 140 else conversation_id[:140] + "..."
        raise InvalidRequestError(
            f"Conversation id {shown!r} is invalid: use 1-128 characters from A-Z a-z 0-9 . _ -, starting with a "
            "letter or digit, without '..'.",
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


def refuse_unpaired_surrogates(data: Any) -> None:
    """Refuse a JSON body whose strings hold an unpaired surrogate escape such as `"\\ud800"`.

    Such JSON is well formed, but the string is not Unicode text: it can be neither measured, stored nor echoed
    as UTF-8.

    Raises:
        InvalidRequestError: with code `invalid_body`.
    """
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError(
            f"The body holds an unpaired surrogate escape ({exc.object[exc.start : exc.end]!r}), which is not "
            "Unicode text; send valid UTF-8 text.",
            code="invalid_body",
        ) from None


def iso_time(epoch_ms: int | None) -> str | None:
    """Milliseconds since the epoch as an ISO 8601 UTC timestamp."""
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def message_text(record: dict[str, Any]) -> str:
    """A stored message's text, joined as core's `Message.text` joins its text contents."""
    if "contents" not in record:
        return record.get("text", "")
    return " ".join(content.get("text", "") for content in record["contents"] if content.get("type") == "text")


def turn_text(record: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """A completed turn's answer, derived from its messages exactly as core's `AgentResponse.text` joins them.

    Turn records store the messages only, so the answer's text is not stored twice.
    """
    if "text" in record:  # written by earlier builds of schema version 1
        return record["text"] or ""
    return "".join(message_text(message) for message in messages)


def render_message(record: dict[str, Any], agent_name: str | None) -> dict[str, Any]:
    """A stored message as the API shows it, with compaction's annotations made readable.

    `agent_name` is the conversation's agent, whose name its assistant messages imply.
    """
    contents = record.get("contents")
    if contents is None:
        contents = [{"type": "text", "text": record.get("text", "")}]
    text = message_text(record)
    props: dict[str, Any] = record.get("props") or {}
    body: dict[str, Any] = {
        "messageId": record["id"],
        "role": record["role"],
        "text": text,
        "contents": contents,
        "createdAt": iso_time(record.get("at")),
        "excluded": bool(props.get(EXCLUDED_KEY, False)),
    }
    author = record_author(record, agent_name)
    if author:
        body["authorName"] = author
    if props.get(EXCLUDE_REASON_KEY):
        body["excludeReason"] = props[EXCLUDE_REASON_KEY]
    group = props.get(GROUP_ANNOTATION_KEY)
    if isinstance(group, dict):
        # Core's annotation keys, renamed for readers: the group a message belongs to, and the summary links.
        if group.get(GROUP_ID_KEY):
            body["group"] = {"id": group[GROUP_ID_KEY], "kind": group.get(GROUP_KIND_KEY)}
        if group.get(SUMMARY_OF_MESSAGE_IDS_KEY):
            body["summaryOf"] = list(group[SUMMARY_OF_MESSAGE_IDS_KEY])
        if group.get(SUMMARIZED_BY_SUMMARY_ID_KEY):
            body["summarizedBy"] = group[SUMMARIZED_BY_SUMMARY_ID_KEY]
    if props:
        body["annotations"] = props
    return body


def render_turn(
    conversation_id: str, turn_id: str, record: dict[str, Any], messages: list[dict[str, Any]], agent_name: str | None
) -> dict[str, Any]:
    """A turn record as the body of a turn response; `messages` is its answer (`answer_messages`)."""
    body: dict[str, Any] = {"conversationId": conversation_id, "turnId": turn_id, "status": record["status"]}
    if record["status"] == "completed":
        body["text"] = turn_text(record, messages)
        body["messages"] = [render_message(message, agent_name) for message in messages]
        body["usage"] = record.get("usage") or {}
        body["approvalRequests"] = record.get("approvalRequests", [])
    else:
        body["error"] = record["error"]
    body["completedAt"] = iso_time(record.get("at"))
    return body


def render_pending(conversation_id: str, turn_id: str) -> dict[str, Any]:
    """The body of a turn that has not finished yet."""
    return {"conversationId": conversation_id, "turnId": turn_id, "status": "pending"}
