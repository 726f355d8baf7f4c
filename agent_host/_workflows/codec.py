"""The JSON form of values executors send each other, as they cross the orchestration's history and activities.

JSON values travel as they are; Agent Framework messages, responses, agent executor requests and responses,
contents, dataclasses, pydantic models and enums travel tagged with their type. A message carries its transport
identity (`projection.MessageKey`) beside it, never inside it, so application `message_id`s and properties are
untouched (L3-5). Only values this host wrote are decoded (a class is looked up only if it is a dataclass, a
pydantic model or an enum); what a caller sends over HTTP is coerced to the executor's input type instead.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agent_framework import AgentExecutorRequest, AgentExecutorResponse, AgentResponse, Content, Message
from pydantic import BaseModel

from .projection import Carried, MessageKey, Occurrences, fingerprint

TYPE_KEY = "$type"


class UncarriableValueError(TypeError):
    """A value an executor sent cannot travel between hosted executors."""


class Identities:
    """The transport identity of each message object the run holds (keyed by object, not by content)."""

    def __init__(self) -> None:
        self._by_object: dict[int, Carried] = {}

    def remember(self, carried: Carried) -> Carried:
        """Note a message's identity; returns it."""
        self._by_object[id(carried.message)] = carried
        return carried

    def key_of(self, message: Message) -> MessageKey | None:
        """The identity of this message object, if the run gave it one."""
        carried = self._by_object.get(id(message))
        return carried.key if carried is not None else None

    def carried(self, message: Message, *, producer: str, occurrences: Occurrences) -> Carried:
        """This message with its identity: the known one, or a new occurrence of `producer`.

        A known object keeps its fingerprint: only a `context_filter` can change a message the orchestrator holds,
        and `projection.project` re-fingerprints what a filter returns.
        """
        known = self._by_object.get(id(message))
        if known is not None and known.message is message:
            return known
        return self.remember(occurrences.mint(producer, message))

    def all_carried(self, messages: Iterable[Message], *, producer: str, occurrences: Occurrences) -> list[Carried]:
        """`carried` for each message, in order."""
        return [self.carried(message, producer=producer, occurrences=occurrences) for message in messages]


def encode(value: Any, identities: Identities | None = None) -> Any:
    """The JSON form of `value`; messages known to `identities` carry their identity.

    A message object that appears twice (in a response and in its full conversation, say) is written once and
    referred to after, so it decodes to one object with one identity.

    Raises:
        UncarriableValueError: a value of a type that cannot travel as JSON.
    """
    return _Encoder(identities).encode(value)


class _Encoder:
    def __init__(self, identities: Identities | None) -> None:
        self.identities = identities
        self.seen: dict[int, int] = {}
        self.kept: list[Message] = []

    def encode(self, value: Any) -> Any:
        return _encode_value(value, self)


def _encode_value(value: Any, encoder: _Encoder) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode_value(item, encoder) for item in value]
    if isinstance(value, tuple):
        return {TYPE_KEY: "tuple", "items": [_encode_value(item, encoder) for item in value]}
    if isinstance(value, dict):
        if all(isinstance(name, str) for name in value) and TYPE_KEY not in value:
            return {name: _encode_value(item, encoder) for name, item in value.items()}
        return {
            TYPE_KEY: "dict",
            "items": [[_encode_value(k, encoder), _encode_value(v, encoder)] for k, v in value.items()],
        }
    if isinstance(value, Message):
        return _encode_message(value, encoder)
    if isinstance(value, AgentExecutorResponse):
        return {
            TYPE_KEY: "agent_executor_response",
            "executorId": value.executor_id,
            "agentResponse": _encode_value(value.agent_response, encoder),
            "fullConversation": [_encode_message(message, encoder) for message in value.full_conversation],
        }
    if isinstance(value, AgentExecutorRequest):
        return {
            TYPE_KEY: "agent_executor_request",
            "messages": [_encode_message(message, encoder) for message in value.messages],
            "shouldRespond": value.should_respond,
        }
    if isinstance(value, AgentResponse):
        rest = value.to_dict()
        rest.pop("messages", None)
        return {
            TYPE_KEY: "agent_response",
            "messages": [_encode_message(message, encoder) for message in value.messages],
            "response": rest,
        }
    if isinstance(value, Content):
        return {TYPE_KEY: "content", "content": value.to_dict()}
    if isinstance(value, enum.Enum):
        return {TYPE_KEY: "enum", "class": _class_path(type(value)), "value": _encode_value(value.value, encoder)}
    if isinstance(value, BaseModel):
        return {TYPE_KEY: "model", "class": _class_path(type(value)), "data": value.model_dump(mode="json")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {item.name: _encode_value(getattr(value, item.name), encoder) for item in dataclasses.fields(value)}
        return {TYPE_KEY: "dataclass", "class": _class_path(type(value)), "fields": fields}
    raise UncarriableValueError(
        f"A {type(value).__module__}.{type(value).__qualname__} cannot travel between hosted executors: send JSON "
        "values, dataclasses, pydantic models, enums or Agent Framework messages."
    )


def decode(data: Any, identities: Identities, *, producer: str, occurrences: Occurrences) -> Any:
    """The value `encode` wrote; a message without an identity becomes a new occurrence of `producer`."""
    return _decode_value(data, _Decoder(identities, producer, occurrences))


@dataclass
class _Decoder:
    identities: Identities
    producer: str
    occurrences: Occurrences
    messages: dict[int, Message] = field(default_factory=dict)


def _decode_value(data: Any, decoder: _Decoder) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [_decode_value(item, decoder) for item in data]
    kind = data.get(TYPE_KEY)
    if kind is None:
        return {name: _decode_value(item, decoder) for name, item in data.items()}

    def inner(item: Any) -> Any:
        return _decode_value(item, decoder)

    if kind in ("message", "message_ref"):
        return _decode_message(data, decoder)
    if kind == "agent_executor_response":
        response = inner(data["agentResponse"])
        conversation = [_decode_message(item, decoder) for item in data["fullConversation"]]
        return AgentExecutorResponse(data["executorId"], response, conversation)
    if kind == "agent_executor_request":
        messages = [_decode_message(item, decoder) for item in data["messages"]]
        return AgentExecutorRequest(messages=messages, should_respond=data["shouldRespond"])
    if kind == "agent_response":
        messages = [_decode_message(item, decoder) for item in data["messages"]]
        response = AgentResponse.from_dict({**data["response"], "messages": []})
        response.messages = messages
        return response
    if kind == "content":
        return Content.from_dict(data["content"])
    if kind == "tuple":
        return tuple(inner(item) for item in data["items"])
    if kind == "dict":
        return {inner(k): inner(v) for k, v in data["items"]}
    cls = _class_at(data["class"])
    if kind == "enum" and issubclass(cls, enum.Enum):
        return cls(inner(data["value"]))
    if kind == "model" and issubclass(cls, BaseModel):
        return cls.model_validate(data["data"])
    if kind == "dataclass" and dataclasses.is_dataclass(cls):
        values = {name: inner(item) for name, item in data["fields"].items()}
        init = {item.name: values[item.name] for item in dataclasses.fields(cls) if item.init and item.name in values}
        instance = cls(**init)
        for name, value in values.items():
            if name not in init:
                object.__setattr__(instance, name, value)
        return instance
    raise ValueError(f"Not a value this host encoded: {kind!r} of {data['class']!r}.")


def _encode_message(message: Message, encoder: _Encoder) -> dict[str, Any]:
    serial = encoder.seen.get(id(message))
    if serial is not None:
        return {TYPE_KEY: "message_ref", "ref": serial}
    encoder.seen[id(message)] = serial = len(encoder.kept)
    encoder.kept.append(message)  # keeps the object alive, so its id is not reused while encoding
    encoded: dict[str, Any] = {TYPE_KEY: "message", "message": message.to_dict(), "serial": serial}
    key = encoder.identities.key_of(message) if encoder.identities is not None else None
    if key is not None:
        encoded["key"] = key.to_json()
    return encoded


def _decode_message(data: dict[str, Any], decoder: _Decoder) -> Message:
    if data[TYPE_KEY] == "message_ref":
        return decoder.messages[data["ref"]]
    message = Message.from_dict(data["message"])
    decoder.messages[data.get("serial", -1 - len(decoder.messages))] = message
    if "key" in data:
        key = MessageKey.from_json(data["key"])
        decoder.identities.remember(Carried(message, MessageKey(key.producer, key.occurrence, fingerprint(message))))
    else:
        decoder.identities.remember(decoder.occurrences.mint(decoder.producer, message))
    return message


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _class_at(path: str) -> type:
    module_name, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not isinstance(target, type) or not (
        dataclasses.is_dataclass(target) or issubclass(target, (BaseModel, enum.Enum))
    ):
        raise ValueError(f"{path} is not a dataclass, pydantic model or enum; it cannot be decoded.")
    return target


def to_json_output(value: Any) -> Any:
    """A workflow output as a caller reads it: plain JSON (messages and responses in core's dict form)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_json_output(item) for item in value]
    if isinstance(value, dict):
        return {str(name): to_json_output(item) for name, item in value.items()}
    if isinstance(value, (Message, AgentResponse, Content)):
        return value.to_dict()
    if isinstance(value, AgentExecutorResponse):
        return {
            "executorId": value.executor_id,
            "agentResponse": value.agent_response.to_dict(),
            "fullConversation": [message.to_dict() for message in value.full_conversation],
        }
    if isinstance(value, enum.Enum):
        return to_json_output(value.value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: to_json_output(getattr(value, item.name)) for item in dataclasses.fields(value)}
    return str(value)
