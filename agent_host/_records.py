"""The stored-message codec: a core `Message` to and from the JSON record a conversation stores.

A record keeps the message id and every additional property (compaction's annotations live there), so nothing
compaction wrote is lost on save (architecture.md, failure 4). Knows nothing about entities, HTTP or history.
"""

from __future__ import annotations

import copy
from typing import Any

from agent_framework import Content, Message

ASSISTANT_ROLE = "assistant"
_TEXT_ONLY_KEYS = {"type", "text", "additional_properties"}


def message_to_record(message: Message, at: int, agent_name: str | None) -> dict[str, Any]:
    """The stored form of a message: its id, role, contents and every additional property.

    `agent_name` is the conversation's agent: its name is implied on its assistant messages (`record_author`).
    """
    record: dict[str, Any] = {"id": message.message_id, "role": str(message.role)}
    contents = [content.to_dict() for content in message.contents]
    if len(contents) == 1 and contents[0].get("type") == "text" and _is_plain_text(contents[0]):
        record["text"] = contents[0]["text"]
    else:
        record["contents"] = contents
    if message.additional_properties:
        record["props"] = copy.deepcopy(message.additional_properties)
    record.update(author_field(record["role"], message.author_name or None, agent_name))
    record["at"] = at
    return record


def record_to_message(record: dict[str, Any], agent_name: str | None) -> Message:
    """Rebuild the core message from its stored form (`agent_name`: the conversation's agent)."""
    text = record.get("text")
    contents: list[Any] = [text] if text is not None else [Content.from_dict(c) for c in record.get("contents", [])]
    return Message(
        record["role"],
        contents,
        message_id=record["id"],
        author_name=record_author(record, agent_name),
        additional_properties=copy.deepcopy(record.get("props")) or {},
    )


def author_field(role: str, author: str | None, agent_name: str | None) -> dict[str, str | None]:
    """The `author` a stored message carries: none on the agent's own assistant messages (implied), null on an
    assistant message without an author name, and otherwise the name when there is one."""
    if role == ASSISTANT_ROLE:
        return {} if author == agent_name else {"author": author}
    return {"author": author} if author else {}


def record_author(record: dict[str, Any], agent_name: str | None) -> str | None:
    """A stored message's author name: the agent's own name when an assistant message omits it."""
    if "author" in record:
        return record["author"]
    return agent_name if record["role"] == ASSISTANT_ROLE else None


def message_text(record: dict[str, Any]) -> str:
    """A stored message's text, joined as core's `Message.text` joins its text contents."""
    if "contents" not in record:
        return record.get("text", "")
    return " ".join(content.get("text", "") for content in record["contents"] if content.get("type") == "text")


def _is_plain_text(content: dict[str, Any]) -> bool:
    return content.keys() <= _TEXT_ONLY_KEYS and not content.get("additional_properties")
