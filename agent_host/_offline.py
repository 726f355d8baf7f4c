"""OfflineChatClient: a deterministic stand-in model, clearly labelled, that answers from the conversation it is given.

It remembers facts stated as "my X is Y" (and "I am Y"), answers "what is my X?" from the messages it receives,
calls one of the agent's tools when the user names it, answers core's summarization requests with the facts
it finds, and answers a structured-output request with JSON that fits the schema, so memory, tool calls,
compaction and structured output can be shown without a model. Streamed, it answers word by word at a steady
pace, so streaming can be shown too.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    UsageDetails,
)
from pydantic import BaseModel

OFFLINE_LABEL = "[offline model]"
SUMMARY_LABEL = f"{OFFLINE_LABEL} Summary"

_FACT = re.compile(r"\bmy\s+([a-z][a-z ]{0,30}?)\s+is\s+(.+?)(?=\s+and\s+|[.!?,;\n]|$)", re.IGNORECASE)
_NAME = re.compile(r"\b(?:i am|i'm|call me)\s+([A-Z][\w-]*)", re.IGNORECASE)
_QUESTION = re.compile(r"\bwhat(?:'s| is)\s+my\s+([a-z][a-z ]{0,30}?)\s*\?", re.IGNORECASE)
_TRANSCRIPT_LINE = re.compile(r"^\d+\. \[(\w+)\] (.*)$")
_CALLED = re.compile(r"\bfunction_call (\w+)\(")
_TOOLS_USED = re.compile(r"The assistant used (\w+(?:, \w+)*)\.")
_ARGUMENT = re.compile(r"(\w+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s,)]+)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# Between a run of whitespace and the word after it: the pieces of a streamed reply are words with their spaces.
_WORD_START = re.compile(r"(?<=\s)(?=\S)")
DEFAULT_WORD_DELAY_SECONDS = 0.03


class OfflineChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A chat client that needs no network: every reply is deterministic and starts with "[offline model]".

    Replies follow from the messages the client receives, so it shows whether history reached the model:
    after "My name is Ada." a later "What is my name?" is answered with "Ada" only if that earlier
    message was sent again. Naming one of the agent's tools ("use get_weather city=Paris") makes it call
    that tool; arguments come from `key=value` pairs, or the rest of the sentence for a one-parameter tool.

    With a `response_format` (a pydantic model or a JSON schema) it answers with JSON that fits the schema, read
    from the last user message: an enum field takes the first of its values the message mentions (else its first),
    a boolean is true when the message mentions the field's name, a number is the first number in the message
    (else its minimum or 0), a string is the labelled message itself, a list is empty.

    Args:
        word_delay_seconds: The pause after each word of a streamed reply (a non-streamed reply has none).
        kwargs: Passed to core's chat client layers (middleware, function invocation configuration).
    """

    OTEL_PROVIDER_NAME: ClassVar[str] = "agent_host.offline"

    def __init__(self, *, word_delay_seconds: float = DEFAULT_WORD_DELAY_SECONDS, **kwargs: Any) -> None:
        if word_delay_seconds < 0:
            raise ValueError(f"word_delay_seconds must be 0 or more, got {word_delay_seconds}")
        super().__init__(**kwargs)
        self.word_delay_seconds = word_delay_seconds

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse | ResponseStream[ChatResponseUpdate, ChatResponse]:
        response_format = options.get("response_format")
        if response_format is not None and _summary_request(list(messages)) is None:
            reply = Message("assistant", [_structured_reply(response_format, list(messages))])
        else:
            reply = _reply(list(messages), list(options.get("tools") or []))
        response = ChatResponse(messages=[reply], model="offline", usage_details=_usage(messages, reply))
        if not stream:
            return response

        async def _updates() -> Any:
            for content in reply.contents:
                if content.type != "text" or not content.text:
                    yield ChatResponseUpdate(role="assistant", contents=[content], message_id=reply.message_id)
                    continue
                for word in _WORD_START.split(content.text):
                    yield ChatResponseUpdate(
                        role="assistant", contents=[Content.from_text(word)], message_id=reply.message_id
                    )
                    await asyncio.sleep(self.word_delay_seconds)
            # Usage comes last, as streaming services send it, so a streamed turn records what a waited one does.
            yield ChatResponseUpdate(role="assistant", contents=[Content.from_usage(response.usage_details or {})])

        return ResponseStream(_updates(), finalizer=lambda updates: response)


def _reply(messages: list[Message], tools: list[Any]) -> Message:
    transcript = _summary_request(messages)
    if transcript is not None:
        return Message("assistant", [_summary(transcript)])
    last = messages[-1] if messages else Message("user", [""])
    if last.role == "tool":
        results = [c for c in last.contents if c.type == "function_result"]
        summary = "; ".join(f"{_result_text(c.result)}" for c in results) or "no result"
        return Message("assistant", [f"{OFFLINE_LABEL} The tool returned: {summary}"])
    text = last.text or ""
    call = _tool_call(text, tools, len(messages))
    if call is not None:
        return Message("assistant", [call])
    return Message("assistant", [f"{OFFLINE_LABEL} {_answer(text, messages[:-1])}"])


def _structured_reply(response_format: Any, messages: list[Message]) -> str:
    users = [message for message in messages if message.role == "user"]
    text = (users[-1].text if users else "") or ""
    schema = _schema_of(response_format)
    return json.dumps(_fitting_value(schema, schema.get("$defs", {}), text, ""))


def _schema_of(response_format: Any) -> dict[str, Any]:
    """The JSON schema of a pydantic model, of core's chat-style `{"type": "json_schema", ...}`, or as given."""
    if inspect.isclass(response_format) and issubclass(response_format, BaseModel):
        return response_format.model_json_schema()
    if isinstance(response_format, Mapping):
        if response_format.get("type") == "json_schema":
            section = response_format.get("json_schema", response_format)
            return dict(section.get("schema") or {})
        return dict(response_format)
    return {}


def _fitting_value(schema: Mapping[str, Any], defs: Mapping[str, Any], text: str, name: str) -> Any:
    if "$ref" in schema:
        return _fitting_value(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, text, name)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        chosen = next((option for option in options if option.get("type") != "null"), options[0])
        return _fitting_value(chosen, defs, text, name)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        named = [value for value in schema["enum"] if isinstance(value, str) and _mentions(text, value)]
        return named[0] if named else schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties: Mapping[str, Any] = schema.get("properties", {})
        return {key: _fitting_value(value, defs, text, key) for key, value in properties.items()}
    if kind == "boolean":
        return bool(name) and _mentions(text, name.replace("_", " "))
    if kind in ("integer", "number"):
        found = _NUMBER.search(text)
        number = float(found.group()) if found else schema.get("minimum", 0)
        return int(number) if kind == "integer" else number
    if kind == "array":
        return []
    if kind == "null":
        return None
    return f"{OFFLINE_LABEL} {text.strip()}"


def _mentions(text: str, words: str) -> bool:
    return re.search(rf"\b{re.escape(words)}\b", text, re.IGNORECASE) is not None


def _answer(text: str, earlier: list[Message]) -> str:
    facts = _facts(m.text or "" for m in earlier if m.role == "user" or _is_summary(m.role, m.text or ""))
    question = _QUESTION.search(text)
    if question:
        subject = question.group(1).strip().lower()
        if subject in facts:
            return f"Your {subject} is {facts[subject]}."
        return f"I don't know your {subject} yet; nobody told me in this conversation."
    stated = _facts([text])
    if stated:
        noted = ", ".join(f"your {key} is {value}" for key, value in stated.items())
        return f"Noted: {noted}. ({len(earlier)} earlier messages in this conversation.)"
    return f'You said: "{text.strip()}". ({len(earlier)} earlier messages in this conversation.)'


def _summary_request(messages: list[Message]) -> list[tuple[str, str]] | None:
    """The transcript lines ("1. [user] text") of a request from core's SummarizationStrategy, else None."""
    if len(messages) != 2 or messages[0].role != "system" or messages[1].role != "user":
        return None
    if "summar" not in (messages[0].text or "").lower():
        return None
    lines: list[tuple[str, str]] = []
    for line in (messages[1].text or "").splitlines():
        if match := _TRANSCRIPT_LINE.match(line):
            lines.append((match.group(1), match.group(2)))
        elif lines:
            lines[-1] = (lines[-1][0], f"{lines[-1][1]}\n{line}")
        else:
            return None
    return lines or None


def _summary(transcript: list[tuple[str, str]]) -> str:
    # Facts the user stated and tools the assistant used, with those an earlier summary kept, so recall survives
    # the summarized messages.
    facts = _facts(text for role, text in transcript if role == "user" or _is_summary(role, text))
    stated = "; ".join(f"my {key} is {value}" for key, value in facts.items()) or "nothing to remember"
    tools = [name for role, text in transcript if role == "assistant" for name in _tools_named(text)]
    used = f" The assistant used {', '.join(dict.fromkeys(tools))}." if tools else ""
    return f"{SUMMARY_LABEL} of {len(transcript)} earlier messages. The user said: {stated}.{used}"


def _tools_named(text: str) -> list[str]:
    if match := _TOOLS_USED.search(text):
        return match.group(1).split(", ")
    return _CALLED.findall(text)


def _is_summary(role: str, text: str) -> bool:
    return role == "assistant" and text.startswith(SUMMARY_LABEL)


def _facts(texts: Any) -> dict[str, str]:
    facts: dict[str, str] = {}
    for text in texts:
        for match in _FACT.finditer(text):
            facts[match.group(1).strip().lower()] = match.group(2).strip()
        for match in _NAME.finditer(text):
            facts["name"] = match.group(1)
    return facts


def _tool_call(text: str, tools: list[Any], position: int) -> Content | None:
    for tool in tools:
        name = getattr(tool, "name", None)
        if not name or not re.search(rf"\b{re.escape(name)}\b", text):
            continue
        parameters = getattr(tool, "parameters", None)
        schema = parameters() if callable(parameters) else {}
        properties = list((schema or {}).get("properties", {}))
        arguments = {key: value.strip("\"'") for key, value in _ARGUMENT.findall(text) if key in properties}
        if not arguments and len(properties) == 1:
            rest = text.split(name, 1)[1].strip(" :,.?!")
            rest = re.sub(r"^(for|with|on|about|in)\s+", "", rest, flags=re.IGNORECASE)
            if rest:
                arguments = {properties[0]: rest}
        return Content.from_function_call(f"offline-call-{position}", name, arguments=json.dumps(arguments))
    return None


def _result_text(result: Any) -> str:
    if isinstance(result, list):
        return " ".join(_result_text(item) for item in result)
    text = getattr(result, "text", None)
    return str(text if text is not None else result)


def _usage(messages: Sequence[Message], reply: Message) -> UsageDetails:
    # About four characters a token, as core's CharacterEstimatorTokenizer counts.
    prompt = sum(len(m.text or "") for m in messages) // 4 + len(messages)
    completion = len(reply.text or "") // 4 + 1
    return {"input_token_count": prompt, "output_token_count": completion, "total_token_count": prompt + completion}
