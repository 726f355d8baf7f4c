"""What a caller sees of a turn while it runs: stream events drawn from core's updates, or from stored answers.

`UpdateEvents` turns the `AgentResponseUpdate`s of a streamed run into event drafts; `answer_events` draws the same
events from a finished answer's messages, for a turn replayed from its receipt. Drafts are `(event, data)` pairs:
the writer or the reader numbers them. Knows core's content types and the channel's event names; nothing about
stores, HTTP or the entity.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_framework import AgentResponseUpdate, Content, Message

from .channel import APPROVAL_REQUESTED, MESSAGE_DELTA, TOOL_CALL, TOOL_RESULT, TURN_STARTED

EventDraft = tuple[str, dict[str, Any]]
"""An event before it has its id: the event name and its JSON data."""


def started_event(turn_id: str, attempt: int) -> EventDraft:
    """The first event of an attempt at a turn; an attempt after the first voids what the one before streamed."""
    return TURN_STARTED, {"turnId": turn_id, "attempt": attempt}


def delta_event(message_id: str, role: str, text: str) -> EventDraft:
    """A piece of a message's text."""
    return MESSAGE_DELTA, {"messageId": message_id, "role": role, "text": text}


def tool_call_event(call_id: str, name: str, arguments: Any) -> EventDraft:
    """A tool call the model asked for, with its whole arguments."""
    return TOOL_CALL, {"callId": call_id, "name": name, "arguments": parsed_arguments(arguments)}


def tool_result_event(content: Content) -> EventDraft:
    """What a tool returned."""
    return TOOL_RESULT, {"callId": content.call_id, "result": _json_value(content.result)}


def approval_event(content: Content) -> EventDraft:
    """A tool call that waits for the caller's approval: the id to answer, as a turn's `approvalRequests` show it."""
    call = content.function_call
    name = call.name if call is not None else None
    arguments = parsed_arguments(call.arguments) if call is not None else None
    return APPROVAL_REQUESTED, {"id": content.id, "toolName": name, "arguments": arguments}


def parsed_arguments(arguments: Any) -> Any:
    """Tool call arguments as JSON: a JSON object sent as text is parsed, anything else is shown as it is."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return arguments
    return _json_value(arguments)


def _json_value(value: Any) -> Any:
    """A value as JSON can carry it: JSON types as they are, core contents by their text, anything else as text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    text = getattr(value, "text", None)
    return text if isinstance(text, str) else str(value)


@dataclass
class _PendingCall:
    """A function call whose pieces are still arriving."""

    name: str = ""
    arguments: Any = ""
    sent: bool = False


@dataclass
class UpdateEvents:
    """The events of one streamed run, drawn from its updates in order.

    Text becomes `message.delta`; a tool call, whose arguments may arrive in pieces, becomes one `tool.call` once
    it is whole (when its result or an approval request for it arrives, or the run ends); results become
    `tool.result`; approval requests `approval.requested`. A message without an id from the model is named
    `{turnId}.{n}`, n counting the run's messages, so deltas of one message share an id.

    Args:
        turn_id: The turn, for naming messages the model left unnamed.
    """

    turn_id: str
    _calls: dict[str, _PendingCall] = field(default_factory=dict, init=False)
    _message: tuple[str | None, str] | None = field(default=None, init=False)
    _message_id: str = field(default="", init=False)
    _count: int = field(default=0, init=False)

    def from_update(self, update: AgentResponseUpdate) -> list[EventDraft]:
        """The events one update adds (often none: a piece of a tool call, usage, reasoning)."""
        drafts: list[EventDraft] = []
        role = str(update.role or "assistant")
        for content in update.contents:
            if content.type == "text" and content.text:
                drafts.append(delta_event(self._message_id_for(update.message_id, role), role, content.text))
            elif content.type == "function_call" and content.call_id:
                self._add_call_piece(content)
            elif content.type == "function_result" and content.call_id:
                drafts.extend(self._send_call(content.call_id))
                drafts.append(tool_result_event(content))
            elif content.type == "function_approval_request":
                call = content.function_call
                if call is not None and call.call_id:
                    # The request carries the whole call: a call streamed before it is already whole.
                    if call.call_id not in self._calls:
                        self._add_call_piece(call)
                    drafts.extend(self._send_call(call.call_id))
                drafts.append(approval_event(content))
        return drafts

    def finish(self) -> list[EventDraft]:
        """The tool calls still unsent when the run ends (calls the run did not execute)."""
        return [draft for call_id in list(self._calls) for draft in self._send_call(call_id)]

    def _message_id_for(self, message_id: str | None, role: str) -> str:
        # A new message starts when the role changes or the model names another message.
        current = self._message
        if current is None or role != current[1] or (message_id is not None and message_id != current[0]):
            self._message = (message_id, role)
            self._message_id = message_id or f"{self.turn_id}.{self._count}"
            self._count += 1
        return self._message_id

    def _add_call_piece(self, content: Content) -> None:
        call = self._calls.setdefault(str(content.call_id), _PendingCall())
        if content.name and not call.name:
            call.name = content.name
        if isinstance(content.arguments, str) and isinstance(call.arguments, str):
            call.arguments += content.arguments
        elif content.arguments is not None:
            call.arguments = content.arguments

    def _send_call(self, call_id: str) -> list[EventDraft]:
        call = self._calls.get(call_id)
        if call is None or call.sent:
            return []
        call.sent = True
        return [tool_call_event(call_id, call.name, call.arguments)]


def answer_events(messages: Sequence[Message], approval_requests: Iterable[dict[str, Any]] = ()) -> list[EventDraft]:
    """The events of a finished answer, for a turn replayed from its receipt: one delta per message's text, its
    tool calls and results, and the approvals it left pending (in the receipt's `approvalRequests` shape)."""
    drafts: list[EventDraft] = []
    for message in messages:
        role = str(message.role)
        for content in message.contents:
            if content.type == "text" and content.text:
                drafts.append(delta_event(message.message_id or "", role, content.text))
            elif content.type == "function_call" and content.call_id:
                drafts.append(tool_call_event(content.call_id, content.name or "", content.arguments))
            elif content.type == "function_result" and content.call_id:
                drafts.append(tool_result_event(content))
    drafts.extend((APPROVAL_REQUESTED, dict(request)) for request in approval_requests)
    return drafts
