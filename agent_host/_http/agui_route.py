"""The AG-UI front door: `POST /api/agents/{agent}/agui`, a `RunAgentInput` in, AG-UI events out as Server-Sent Events.

A run is one turn of the conversation its `threadId` names, with its `runId` as the turn's idempotency key: of the
messages the client sends only those the conversation does not hold yet are the turn's input, and the turn's stream
is told as AG-UI events. The few AG-UI shapes are written here, so the app needs no AG-UI package at run time. Knows
the AG-UI wire format, the conversation client and the turn stream; nothing of how the entity runs a turn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import azure.functions as func
from pydantic import AliasChoices, ConfigDict, Field

from .._clock import Clock
from .._contract import AgentRoute, WireModel, parse_model, validate_conversation_id
from .._conversation.view import ConversationView
from .._conversation_client.client import ConversationClient
from .._conversation_client.in_flight import InFlight
from .._conversation_client.turns import Accepted, Answered, Failed, Gone, Pending, TurnAsk, take_turn
from .._errors import AgentHostError, InvalidRequestError, MessageTooLargeError, TurnExpiredError
from .._settings import HostSettings
from .._streaming.channel import (
    APPROVAL_REQUESTED,
    MESSAGE_DELTA,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_COMPLETED,
    TURN_FAILED,
    StreamEvent,
)
from .event_stream import KEEP_ALIVE, EventStreamResponse
from .requests import IDEMPOTENCY_KEY_PATTERN, body_text, json_object
from .turn_stream import TurnStreamReader

_RUN_SHAPE = '{"threadId": "c1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "Hello"}]}'
# What agent-framework-ag-ui's approval interrupts ask for (`approved`, or the legacy `accepted`).
APPROVAL_ANSWER_FIELDS = ("approved", "accepted")
AgentEvent = dict[str, Any]


class AguiMessage(WireModel):
    """One message of a `RunAgentInput` (AG-UI's `Message`): only what a turn's input needs is read."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    id: str | None = None
    role: Literal["user", "assistant", "system", "developer", "tool", "reasoning", "activity"]
    content: str | list[dict[str, Any]] | None = None
    tool_call_id: str | None = Field(None, validation_alias=AliasChoices("toolCallId", "tool_call_id"))
    tool_calls: list[dict[str, Any]] | None = Field(None, validation_alias=AliasChoices("toolCalls", "tool_calls"))


class AguiResume(WireModel):
    """An answer to an interrupt the last run finished with (AG-UI's `ResumeEntry`)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    interrupt_id: str = Field(validation_alias=AliasChoices("interruptId", "interrupt_id"))
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None


class AguiRunInput(WireModel):
    """AG-UI's `RunAgentInput`, in its camelCase spelling or the snake_case one Agent Framework's client sends.

    Fields of newer protocol versions are ignored, as AG-UI servers ignore them; `tools`, `context`, `state` and
    `forwardedProps` are read but not used: the agent runs with its own tools and instructions.
    """

    model_config = ConfigDict(populate_by_name=True, extra="ignore")
    shape: ClassVar[str] = _RUN_SHAPE

    thread_id: str = Field(validation_alias=AliasChoices("threadId", "thread_id"))
    run_id: str = Field(validation_alias=AliasChoices("runId", "run_id"))
    messages: list[AguiMessage] = []
    tools: list[Any] | None = None
    context: list[Any] | None = None
    state: Any = None
    forwarded_props: Any = Field(None, validation_alias=AliasChoices("forwardedProps", "forwarded_props"))
    resume: list[AguiResume] | None = None


@dataclass(frozen=True)
class TurnInput:
    """What a run asks of its turn: the new user text, and answers to pending approvals by approval id."""

    message: str | None
    approvals: list[dict[str, Any]]


async def run_agui(
    req: func.HttpRequest,
    caller_conversations: Callable[[], ConversationClient],
    agent: AgentRoute,
    settings: HostSettings,
    clock: Clock,
    reader: Callable[[str, str], TurnStreamReader],
    in_flight: Callable[[str], InFlight | None],
) -> EventStreamResponse:
    """`POST /api/agents/{agent}/agui`: run one turn of the thread and stream it as AG-UI events.

    `caller_conversations()` gives the caller's conversations once the run is known to be valid;
    `reader(conversation_id, turn_id)` follows a turn's stream; `in_flight(conversation_id)` lists the turn among the
    conversation's turns in flight, so `ifBusy` and cancel on `POST .../turns` see it. Everything that can be refused
    is refused before the stream starts, as JSON.

    Raises:
        InvalidRequestError: the body is not a `RunAgentInput`, the thread or run id is invalid, or it brings
            nothing new to run.
        MessageTooLargeError: the new text is over the message limit.
        TurnExpiredError: the run's turn ran, but its receipt is no longer kept.
        UnknownApprovalError, ApprovalAnsweredError: an answer names no pending approval.
    """
    run = parse_model(AguiRunInput, json_object(body_text(req, settings.max_message_bytes), _RUN_SHAPE))
    conversation_id = validate_conversation_id(run.thread_id, agent)
    if not IDEMPOTENCY_KEY_PATTERN.fullmatch(run.run_id):
        raise InvalidRequestError(
            f"runId {run.run_id[:80]!r} is invalid: send 1-255 visible ASCII characters, new for each run.",
            code="invalid_run_id",
        )
    conversations = caller_conversations()
    state = await conversations.read(conversation_id)
    live = state if state is not None and not state.is_deleted else ConversationView.empty()
    turns_url = req.url.split("?", 1)[0].rstrip("/").removesuffix("/agui") + f"/conversations/{conversation_id}/turns"
    earlier = live.keyed_turn(run.run_id)
    if earlier is not None:
        # A retry of a run: its history now holds what the run sent, so the run's own turn is told again.
        turn_id = earlier.turn_id
    else:
        expired = live.expired_keyed_turn(run.run_id)
        if expired is not None:
            raise TurnExpiredError(conversation_id, expired)
        turn = turn_input(run, live, settings.max_message_bytes)
        payload: dict[str, Any] = {"message": turn.message}
        if turn.approvals:
            payload["approvals"] = turn.approvals
        ask = TurnAsk(conversation_id, payload, idempotency_key=run.run_id, stream=True)
        match await take_turn(conversations, ask, clock, in_flight(conversation_id)):
            case Accepted(turn_id) | Pending(turn_id):
                pass
            case Answered(settled, _) | Failed(settled, _):
                turn_id = settled.turn_id
            case Gone(_, error):
                raise error
    events = AguiEvents(run.thread_id, run.run_id, conversations.read, conversation_id)
    body = events.sse(reader(conversation_id, turn_id))
    return EventStreamResponse(body, headers={"Location": f"{turns_url}/{turn_id}"})


def turn_input(run: AguiRunInput, state: ConversationView, max_message_bytes: int) -> TurnInput:
    """The turn a run asks for: the new messages' user text, and their answers to the pending approvals.

    Raises:
        MessageTooLargeError: the new text is over `max_message_bytes` (UTF-8).
        InvalidRequestError: a new message is not text, a tool result answers no pending approval, an answer is
            not a yes or no, or nothing new is sent (code `missing_message`).
    """
    fresh = new_messages(run.messages, state.messages)
    pending = state.pending_approvals_by_id
    by_call = {_call_id(item): approval_id for approval_id, item in pending.items()}
    texts = [_user_text(message) for message in fresh if message.role == "user"]
    approvals: dict[str, bool] = {}
    for message in fresh:
        if message.role == "tool":
            approval_id = by_call.get(message.tool_call_id or "")
            if approval_id is None:
                raise InvalidRequestError(
                    f"The tool message for call {message.tool_call_id!r} answers no pending approval: this host runs "
                    "the agent's own tools only. Answer a pending approval, or send a user message.",
                    code="invalid_body",
                )
            approvals[approval_id] = _approved(_json_or_text(message.content), message.tool_call_id or "")
    for entry in run.resume or ():
        approval_id = entry.interrupt_id if entry.interrupt_id in pending else by_call.get(entry.interrupt_id)
        if approval_id is None:
            # Passed on as it is, so the approvals check refuses it, naming the pending ones.
            approvals[entry.interrupt_id] = False
        else:
            cancelled = entry.status == "cancelled"
            approvals[approval_id] = False if cancelled else _approved(entry.payload, entry.interrupt_id)
    joined = "\n\n".join(text for text in texts if text) or None
    size = len((joined or "").encode("utf-8"))
    if size > max_message_bytes:
        raise MessageTooLargeError(size, max_message_bytes)
    if joined is None and not approvals:
        raise InvalidRequestError(
            "The run brings nothing new: every message it sends is already in the conversation. Add a user "
            "message, or answer a pending approval in `resume`.",
            code="missing_message",
        )
    return TurnInput(joined, [{"id": approval_id, "approved": ok} for approval_id, ok in approvals.items()])


def new_messages(sent: Sequence[AguiMessage], stored: Sequence[dict[str, Any]]) -> list[AguiMessage]:
    """The messages a client sends that the conversation does not hold: those after the last one it holds.

    A sent message is held when its id is a stored message's id, or it carries a stored tool call (an assistant
    message's `toolCalls`, a tool message's `toolCallId` of a call whose result is stored). A client that names
    messages afresh on every send (core's `Message` without an id gets a new one each time) is otherwise matched on
    the conversation's newest message, by role and text: a client that sends its history has it, and one that sends
    only new messages does not (matching older messages by text would take a repeated "yes" for one already stored).
    """
    stored_ids = {record["id"] for record in stored}
    calls = _stored_call_ids(stored, "function_call")
    results = _stored_call_ids(stored, "function_result")
    held = [index for index, message in enumerate(sent) if _is_held(message, stored_ids, calls, results)]
    if not held and stored:
        newest = (stored[-1]["role"], _record_text(stored[-1]))
        held = [index for index, message in enumerate(sent) if (message.role, _text(message)) == newest]
    return list(sent[held[-1] + 1 :]) if held else list(sent)


def _is_held(message: AguiMessage, stored_ids: set[str], calls: set[str], results: set[str]) -> bool:
    if message.id is not None and message.id in stored_ids:
        return True
    if message.role == "tool":
        return message.tool_call_id in results
    return any(call.get("id") in calls for call in message.tool_calls or ())


def _stored_call_ids(stored: Sequence[dict[str, Any]], kind: str) -> set[str]:
    """The call ids of the stored contents of one kind (`function_call`, `function_result`)."""
    return {
        str(content["call_id"])
        for record in stored
        for content in record.get("contents", ())
        if content.get("type") == kind and content.get("call_id")
    }


def _text(message: AguiMessage) -> str:
    """A message's text: its content, or its text parts joined."""
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part["text"] for part in content if part.get("type") == "text" and isinstance(part.get("text"), str))


def _user_text(message: AguiMessage) -> str:
    """A new user message's text; one with other parts (AG-UI's binary input) is refused.

    Raises:
        InvalidRequestError: with code `invalid_body`.
    """
    for part in message.content if isinstance(message.content, list) else ():
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise InvalidRequestError(
                f"Message {message.id!r} holds a {part.get('type')!r} part: this route takes text parts only. Send "
                "files through POST .../turns with `contents`.",
                code="invalid_body",
            )
    return _text(message)


def _record_text(record: dict[str, Any]) -> str:
    if "text" in record:
        return str(record["text"])
    return "".join(str(c.get("text", "")) for c in record.get("contents", []) if c.get("type") == "text")


def _json_or_text(content: Any) -> Any:
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def _approved(answer: Any, about: str) -> bool:
    """The yes or no of an approval answer: `{"approved": bool}` (or the legacy `accepted`), or a bare boolean.

    Raises:
        InvalidRequestError: the answer is neither (code `invalid_body`).
    """
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, dict):
        for name in APPROVAL_ANSWER_FIELDS:
            if isinstance(answer.get(name), bool):
                return bool(answer[name])
    raise InvalidRequestError(
        f'The answer to {about!r} must be {{"approved": true}} or {{"approved": false}}, got {answer!r:.80}.',
        code="invalid_body",
    )


def _call_id(pending: dict[str, Any]) -> str | None:
    """The tool call a stored approval request is for."""
    call = pending.get("request", {}).get("function_call") or {}
    return call.get("call_id")


def encode(event: AgentEvent) -> bytes:
    """One AG-UI event as SSE: a `data:` line of its JSON, as AG-UI's own encoder writes it."""
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode("utf-8", "backslashreplace")


@dataclass
class AguiEvents:
    """One run's turn events told as AG-UI events.

    Text opens a message (`TEXT_MESSAGE_START`) that the next non-text event, or another message, closes; a tool
    call is sent whole (`TOOL_CALL_START`, `_ARGS`, `_END`); approvals the turn leaves pending are sent as
    agent-framework-ag-ui sends them: a `function_approval_request` custom event each, and interrupts in the
    `RUN_FINISHED` outcome.

    Args:
        thread_id: The run's thread (the conversation id).
        run_id: The run's id.
        read: Reads the conversation (for the tool call a pending approval is for).
        conversation_id: The conversation.
    """

    thread_id: str
    run_id: str
    read: Callable[[str], Awaitable[ConversationView | None]]
    conversation_id: str
    _open: str | None = field(default=None, init=False)

    async def sse(self, reader: TurnStreamReader) -> AsyncIterator[bytes]:
        """The run's events as SSE, from `RUN_STARTED` to `RUN_FINISHED` or `RUN_ERROR`."""
        yield encode({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id})
        try:
            async for event in reader.follow(0):
                if event is None:
                    yield KEEP_ALIVE
                    continue
                for agui in await self.from_turn_event(event):
                    yield encode(agui)
                if event.event in (TURN_COMPLETED, TURN_FAILED):
                    return
        except AgentHostError as error:
            yield encode(self._error(error.message, error.code))
            return
        yield encode(self._error("The turn is still running; read it at the Location this answer named.", "pending"))

    async def from_turn_event(self, event: StreamEvent) -> list[AgentEvent]:
        """The AG-UI events one turn event adds."""
        data = event.data
        if event.event == MESSAGE_DELTA:
            events = [] if self._open == data["messageId"] else self._close()
            if self._open is None:
                self._open = data["messageId"]
                events.append({"type": "TEXT_MESSAGE_START", "messageId": self._open, "role": "assistant"})
            return [*events, {"type": "TEXT_MESSAGE_CONTENT", "messageId": self._open, "delta": data["text"]}]
        events = self._close()
        if event.event == TOOL_CALL:
            call_id = data["callId"]
            arguments = data["arguments"]
            delta = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            events += [
                {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": data["name"]},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": delta},
                {"type": "TOOL_CALL_END", "toolCallId": call_id},
            ]
        elif event.event == TOOL_RESULT:
            result = data["result"]
            content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            events.append(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": f"{data['callId']}.result",
                    "toolCallId": data["callId"],
                    "content": content,
                    "role": "tool",
                }
            )
        elif event.event == APPROVAL_REQUESTED:
            pass  # told from the receipt at the end, with the call each approval is for
        elif event.event == TURN_COMPLETED:
            events += await self._finished(data.get("approvalRequests") or [])
        elif event.event == TURN_FAILED:
            error = data.get("error") or {}
            events.append(self._error(error.get("message", "The turn failed."), error.get("code", "turn_failed")))
        return events

    async def _finished(self, requests: list[dict[str, Any]]) -> list[AgentEvent]:
        """`RUN_FINISHED`, after one custom event per approval the turn left pending, with them as interrupts."""
        finished: AgentEvent = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id}
        if not requests:
            return [finished]
        state = await self.read(self.conversation_id)
        pending = state.pending_approvals_by_id if state is not None else {}
        events: list[AgentEvent] = []
        interrupts = []
        for request in requests:
            call = {
                "call_id": _call_id(pending.get(request["id"], {})),
                "name": request["toolName"],
                "arguments": request["arguments"],
            }
            value = {"id": request["id"], "function_call": call}
            events.append({"type": "CUSTOM", "name": "function_approval_request", "value": value})
            interrupts.append(approval_interrupt(request, call))
        finished["outcome"] = {"type": "interrupt", "interrupts": interrupts}
        return [*events, finished]

    def _close(self) -> list[AgentEvent]:
        if self._open is None:
            return []
        closing, self._open = self._open, None
        return [{"type": "TEXT_MESSAGE_END", "messageId": closing}]

    def _error(self, message: str, code: str) -> AgentEvent:
        return {"type": "RUN_ERROR", "message": message, "code": code}


def approval_interrupt(request: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    """An approval as an AG-UI interrupt, in agent-framework-ag-ui's shape: a tool-call interrupt whose answer is
    `{"approved": bool}`, with the call under `metadata.agent_framework`."""
    function = {"type": "function_approval_request", "function_call": call}
    return {
        "id": request["id"],
        "reason": "tool_call",
        "message": f"Approve running {request['toolName'] or 'this tool'}?",
        "toolCallId": call["call_id"],
        "responseSchema": {
            "type": "object",
            "properties": {"approved": {"type": "boolean", "description": "Whether the tool call is approved."}},
            "required": ["approved"],
        },
        "metadata": {"agent_framework": {**function, "value": function}},
    }
