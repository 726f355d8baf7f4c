"""Fakes for the parity tests: a recording model, a service that stores conversations, and canned tools.

Each fake is deterministic in what it is sent, so two runs that send a model the same input get the same replies,
whatever process or object the run happens in. Logs and stores live outside the clients, like a real service would.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agent_framework import BaseChatClient, ChatResponse, Content, Message, tool
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

from agent_host import safe_to_repeat

SUMMARY_PREFIX = "Summary:"
TOOL_RESULTS_PREFIX = "[Tool results: "


@dataclass
class ModelCall:
    """What one model call received: each message's role, author and contents, and the service options."""

    messages: list[dict[str, Any]]
    conversation_id: str | None = None
    store: bool | None = None


@dataclass
class CallLog:
    """Every call a model received, across however many client objects (and cold starts) sent them."""

    calls: list[ModelCall] = field(default_factory=list)


def model_view(message: Message) -> dict[str, Any]:
    """A message as a model receives it: role, author and contents (host-side annotations are never sent)."""
    return {
        "role": str(message.role),
        "author_name": message.author_name,
        "contents": [content.to_dict(exclude={"raw_representation"}) for content in message.contents],
    }


def call_id_for(text: str) -> str:
    """A tool call id that depends only on the user's request, so both runs and every process agree on it."""
    return "call-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def scripted_reply(messages: Sequence[Message]) -> Message:
    """The model's reply, a function of what it received.

    "call TOOL key=value[, TOOL key=value...]" asks for those tool calls one after another (one per model call);
    when every result is in, the results are acknowledged. Anything else is echoed with the number of messages the
    model saw, so any difference in the history it was sent shows up in the stored transcript.
    """
    last = messages[-1]
    request = next((m for m in reversed(messages) if m.role == "user"), last)
    text = request.text or ""
    if text.startswith("call "):
        wanted = [part.strip() for part in text[len("call ") :].split(",")]
        asked = _results_since(messages, request)
        if len(asked) < len(wanted):
            name, argument = wanted[len(asked)].split(" ", 1)
            key, value = argument.split("=", 1)
            call_id = call_id_for(f"{text}#{len(asked)}")
            return Message("assistant", [Content.from_function_call(call_id, name, arguments=json.dumps({key: value}))])
        return Message("assistant", [f"The tools said: {'; '.join(asked)}"])
    return Message("assistant", [f"Re: {text} (I saw {len(messages)} messages)"])


def _results_since(messages: Sequence[Message], request: Message) -> list[str]:
    # Call-level compaction may have collapsed earlier results of this turn into "[Tool results: ...]" text.
    start = max(index for index, message in enumerate(messages) if message is request)
    results: list[str] = []
    for message in messages[start + 1 :]:
        if message.role == "assistant" and (message.text or "").startswith(TOOL_RESULTS_PREFIX):
            results.extend(message.text[len(TOOL_RESULTS_PREFIX) : -1].split("; "))
        results.extend(str(content.result) for content in message.contents if content.type == "function_result")
    return results


def scripted_summary(messages: Sequence[Message]) -> Message:
    """A summarizer's reply: deterministic in the transcript it was asked to summarize."""
    transcript = messages[-1].text or ""
    digest = hashlib.sha256(transcript.encode()).hexdigest()[:6]
    lines = [line for line in transcript.splitlines() if line.strip()]
    return Message("assistant", [f"{SUMMARY_PREFIX} {len(lines)} lines, digest {digest}."])


class RecordingChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A deterministic model that appends exactly what it receives on every call to a shared log.

    Args:
        log: Where calls are recorded; shared by the client objects of one simulated conversation.
        summarizer: Answer like a summarizer (for ``SummarizationStrategy``) instead of like the agent's model.
    """

    def __init__(self, log: CallLog, *, summarizer: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log
        self.summarizer = summarizer

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        received = list(messages)
        self.log.calls.append(ModelCall([model_view(m) for m in received], options.get("conversation_id")))
        reply = scripted_summary(received) if self.summarizer else scripted_reply(received)
        return ChatResponse(messages=[reply], usage_details={"input_token_count": len(received)})


@dataclass
class ServiceConversations:
    """The model service's own conversation store (outlives every client object, like a real service)."""

    conversations: dict[str, list[Message]] = field(default_factory=dict)


class ServiceStoringChatClient(RecordingChatClient):
    """A model whose service keeps the conversation unless asked not to (``store=False``), like the Responses API.

    Args:
        log: Where calls are recorded.
        service: The service-side conversations.
    """

    STORES_BY_DEFAULT: ClassVar[bool] = True

    def __init__(self, log: CallLog, service: ServiceConversations, **kwargs: Any) -> None:
        super().__init__(log, **kwargs)
        self.service = service

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        received = list(messages)
        store = options.get("store")
        conversation_id = options.get("conversation_id")
        self.log.calls.append(ModelCall([model_view(m) for m in received], conversation_id, store))
        if store is False:
            reply = scripted_reply(received)
            return ChatResponse(messages=[reply])
        conversation_id = conversation_id or f"svc-{len(self.service.conversations) + 1}"
        transcript = [*self.service.conversations.get(conversation_id, []), *received]
        reply = scripted_reply(transcript)
        # A real service keeps its own copy of what it was sent, never the caller's objects.
        kept = [Message.from_dict(message.to_dict()) for message in [*received, reply]]
        self.service.conversations[conversation_id] = [*self.service.conversations.get(conversation_id, []), *kept]
        return ChatResponse(messages=[reply], conversation_id=conversation_id)


# Canned and without side effects: safe to run again in a turn re-run after a crash (the checkpoint parity suite
# cuts turns right after the response that asked for them).
@safe_to_repeat
@tool
def get_weather(city: str) -> str:
    """Get the weather for a city (canned, deterministic)."""
    return f"{city}: sunny, {10 + len(city)} C"


@safe_to_repeat
@tool
def get_time(city: str) -> str:
    """Get the local time in a city (canned, deterministic)."""
    return f"{city}: {len(city) % 12 + 1} o'clock"
