"""A conversation agent-framework-azurefunctions stored (its `dafx-{agent}` entity state), read as our message records.

That host keeps a conversation as request and response entries (`schemaVersion` 1.x, `data.conversationHistory`),
their messages without ids, and contents tagged `$type`. Each message becomes a core `Message` with an id derived
from its entry's correlation id, kind and position, so importing the same state twice names the same messages
(architecture.md, failure 1), then our stored record. Failed turns (responses holding only errors) and reasoning are
left out, as that host never replays them; so are usage and contents of types it could not name. Knows that host's
stored shape and core's contents; nothing about entities or HTTP.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_framework import Content, Message

from ._errors import StateCorruptError
from ._records import message_to_record

PUBLISHED_ENTITY_PREFIX = "dafx-"
SUPPORTED_MAJOR_VERSION = "1"
# Content types that host never sends back to the model, or that carry no message content.
_DROPPED = frozenset({"reasoning", "usage", "error"})


def unreadable(problem: str) -> StateCorruptError:
    """Why the published host's stored conversation cannot be imported (422 `state_corrupt`); nothing changes."""
    return StateCorruptError(
        f"kept by agent-framework-azurefunctions {problem}",
        advice=(
            "Nothing was imported or changed. Repair or delete that host's entity for this conversation, or build "
            "the app without import_published to start the conversation empty."
        ),
    )


@dataclass(frozen=True)
class PublishedConversation:
    """What an import brings: the messages as our records, and an account of where they came from.

    Attributes:
        messages: Message records, in conversation order.
        source: `{"entity", "schemaVersion", "entries", "messages", "skipped"}`, stored with the conversation.
    """

    messages: list[dict[str, Any]]
    source: dict[str, Any]


def published_entity_name(agent_name: str) -> str:
    """The entity that host keeps an agent's conversations in (the Functions host lower-cases entity names)."""
    return f"{PUBLISHED_ENTITY_PREFIX}{agent_name.lower()}"


def read_published_conversation(state: Any, agent_name: str, received_ms: int) -> PublishedConversation:
    """The conversation a `dafx-{agent}` entity stored, as message records of agent `agent_name`.

    `received_ms` stands in for a message's time where the stored one is missing or unreadable.

    Raises:
        StateCorruptError: the state is not JSON, has no 1.x `schemaVersion`, or is not shaped as that host writes
            it (the message says where).
    """
    data = _json(state)
    version = data.get("schemaVersion")
    if not isinstance(version, str) or version.split(".", 1)[0] != SUPPORTED_MAJOR_VERSION:
        raise unreadable(f"has schemaVersion {version!r}; this host imports version 1.x")
    history = data.get("data", {}).get("conversationHistory", []) if isinstance(data.get("data"), dict) else None
    if not isinstance(history, list):
        raise unreadable("has no data.conversationHistory list")
    messages: list[dict[str, Any]] = []
    skipped = 0
    for position, entry in enumerate(history):
        converted, dropped = _entry_messages(entry, position, agent_name, received_ms)
        messages.extend(converted)
        skipped += dropped
    source = {
        "entity": published_entity_name(agent_name),
        "schemaVersion": version,
        "entries": len(history),
        "messages": len(messages),
        "skipped": skipped,
    }
    return PublishedConversation(messages, source)


def _json(state: Any) -> dict[str, Any]:
    if isinstance(state, str):
        try:
            state = json.loads(state)
        except ValueError as exc:
            raise unreadable(f"is not valid JSON ({exc})") from None
    if not isinstance(state, dict):
        raise unreadable(f"is not a JSON object (got {type(state).__name__})")
    return state


def _entry_messages(entry: Any, position: int, agent_name: str, received_ms: int) -> tuple[list[dict[str, Any]], int]:
    """One entry's messages as records, and how many contents or messages were left out."""
    where = f"data.conversationHistory[{position}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("messages"), list):
        raise unreadable(f"has an entry without messages at {where}")
    kind = entry.get("$type", entry.get("json_type"))
    correlation = entry.get("correlationId")
    if kind not in ("request", "response") or not isinstance(correlation, str) or not correlation:
        raise unreadable(f"has an entry of unknown kind or id at {where}")
    contents_of = [message.get("contents", []) if isinstance(message, dict) else None for message in entry["messages"]]
    if kind == "response" and _only_errors(contents_of):
        return [], len(entry["messages"])  # a failed turn: that host records its error as a response
    records: list[dict[str, Any]] = []
    skipped = 0
    for index, message in enumerate(entry["messages"]):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise unreadable(f"has a message without a role at {where}.messages[{index}]")
        contents = []
        for content in message.get("contents") or []:
            converted = _content(content, f"{where}.messages[{index}]")
            if converted is None:
                skipped += 1
            else:
                contents.append(converted)
        if not contents:
            skipped += 1 if not message.get("contents") else 0
            continue
        core = Message(
            message["role"],
            contents,
            message_id=f"{correlation}.{'q' if kind == 'request' else 'a'}{index}",
            author_name=message.get("authorName"),
        )
        at = _epoch_ms(message.get("createdAt")) or _epoch_ms(entry.get("createdAt")) or received_ms
        records.append(message_to_record(core, at, agent_name))
    return records, skipped


def _only_errors(contents_of: list[Any]) -> bool:
    kinds = [
        content.get("$type") for contents in contents_of for content in contents or () if isinstance(content, dict)
    ]
    return bool(kinds) and all(kind == "error" for kind in kinds)


def _content(content: Any, where: str) -> Content | None:
    """Core's content for one stored content, or None for one that is not replayed or of an unknown type."""
    if not isinstance(content, dict):
        raise unreadable(f"has a content that is not an object in {where}")
    kind = content.get("$type")
    if kind in _DROPPED:
        return None
    build = _BUILDERS.get(kind) if isinstance(kind, str) else None
    if build is None:
        return None
    try:
        return build(content)
    except (KeyError, TypeError, ValueError) as exc:
        raise unreadable(f"has a {kind} content that cannot be read in {where} ({exc})") from None


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


_BUILDERS: dict[str, Callable[[Mapping[str, Any]], Content]] = {
    "text": lambda c: Content.from_text(str(c["text"])),
    "data": lambda c: Content.from_uri(c["uri"], media_type=c.get("mediaType")),
    "uri": lambda c: Content.from_uri(c["uri"], media_type=c.get("mediaType")),
    "functionCall": lambda c: Content.from_function_call(
        c["callId"], c["name"], arguments=_arguments(c.get("arguments"))
    ),
    "functionResult": lambda c: Content.from_function_result(c["callId"], result=c.get("result")),
    "hostedFile": lambda c: Content.from_hosted_file(c["fileId"]),
    "hostedVectorStore": lambda c: Content.from_hosted_vector_store(c["vectorStoreId"]),
}


def _epoch_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)
