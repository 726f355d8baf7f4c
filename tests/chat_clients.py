"""Chat clients for tests: a scripted model that records what it receives, streaming or not, and failing models."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_framework import BaseChatClient, ChatResponse, ChatResponseUpdate, Content, Message, ResponseStream
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

Script = Callable[[list[Message], Mapping[str, Any]], Message]


class ScriptedChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A deterministic model that records exactly what it receives on every call.

    By default it replies "reply N: <last user text>"; a user message "call TOOL {json}" makes it call TOOL.
    """

    def __init__(self, script: Script | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = script
        self.calls: list[list[Message]] = []

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        received = list(messages)
        self.calls.append(received)
        script = self.script or (lambda messages, _: default_reply(messages, len(self.calls)))
        reply = script(received, options)
        return ChatResponse(
            messages=[reply], usage_details={"input_token_count": len(received), "output_token_count": 1}
        )


def default_reply(messages: list[Message], call_number: int) -> Message:
    last = messages[-1]
    if last.role == "tool":
        return Message("assistant", [f"tool said {last.contents[0].result}"])
    text = last.text or ""
    if text.startswith("call "):
        _, name, arguments = text.split(" ", 2)
        return Message("assistant", [Content.from_function_call(f"call-{call_number}", name, arguments=arguments)])
    return Message("assistant", [f"reply {call_number}: {text}"])


class EchoScript:
    """A `ScriptedChatClient` script: the answer a test set in `next_answer` (once), else `echo: <last text>`.

    Keeps what each call was sent in `sent`: its messages and its options.
    """

    def __init__(self) -> None:
        self.sent: list[tuple[list[Message], Mapping[str, Any]]] = []
        self.next_answer: str | None = None

    def __call__(self, messages: list[Message], options: Mapping[str, Any]) -> Message:
        self.sent.append((list(messages), dict(options)))
        return self.reply(messages)

    def reply(self, messages: list[Message]) -> Message:
        answer, self.next_answer = self.next_answer, None
        return Message("assistant", [answer or f"echo: {messages[-1].text}"])


class FailingChatClient(ScriptedChatClient):
    """A model whose every call raises."""

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        self.calls.append(list(messages))
        raise RuntimeError("model endpoint unavailable: secret-detail-123")


class StreamingChatClient(ScriptedChatClient):
    """The scripted model, streaming: each reply's text word by word, then its usage, as streaming services do."""

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        response = await super()._inner_get_response(messages=messages, stream=False, options=options, **kwargs)
        if not stream:
            return response
        return word_by_word(response)


class GatedChatClient(StreamingChatClient):
    """The scripted model (streaming when asked) whose calls wait until the test opens the gate (or the gate of
    their message's text).

    `self.calls` grows as a call starts, so a test can wait for a call to be in progress.
    """

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gates: dict[str, threading.Event] = {}
        super().__init__(self._answer)

    def hold(self, text: str) -> threading.Event:
        self.gates[text] = threading.Event()
        return self.gates[text]

    def _answer(self, messages: list[Message], options: Mapping[str, Any]) -> Message:
        self.gates.get(messages[-1].text or "", self.gate).wait(10)
        return default_reply(messages, len(self.calls))


class MidStreamFailingChatClient(ScriptedChatClient):
    """A model that streams the start of its reply, then fails."""

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        self.calls.append(list(messages))

        async def updates() -> Any:
            for word in ("Half ", "an "):
                yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(word)])
            raise ConnectionError("model stream cut off")

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


def word_by_word(response: ChatResponse) -> ResponseStream[ChatResponseUpdate, ChatResponse]:
    """`response` streamed as streaming services do: each text word by word, other contents whole, then the usage."""

    async def updates() -> Any:
        for message in response.messages:
            for content in message.contents:
                if content.type == "text":
                    for number, word in enumerate(content.text.split(" ")):
                        piece = word if number == 0 else f" {word}"
                        yield ChatResponseUpdate(role=message.role, contents=[Content.from_text(piece)])
                else:
                    yield ChatResponseUpdate(role=message.role, contents=[content])
        if response.usage_details:
            yield ChatResponseUpdate(role="assistant", contents=[Content.from_usage(response.usage_details)])

    return ResponseStream(updates(), finalizer=lambda _: response)


def recall_reply(messages: list[Message], options: Mapping[str, Any]) -> Message:
    """A `ScriptedChatClient` script that answers from the messages it is sent: "My name is X." is noted, and
    "What is my name?" answered with the last name any user message gave (or that it does not know one)."""
    names = [m.text.removeprefix("My name is ").rstrip(".") for m in messages if m.text.startswith("My name is ")]
    if messages[-1].text.startswith("What is my name"):
        return Message("assistant", [f"Your name is {names[-1]}." if names else "I do not know your name."])
    return Message("assistant", [f"Noted: {messages[-1].text}"])
