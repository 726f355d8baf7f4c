"""Reading requests, in one place: body size and encoding, content type, JSON, query parameters and headers.

Every route reads its body through here, so every body gets the same size limit, UTF-8 check and JSON rules.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import azure.functions as func
from pydantic import BaseModel

from .._contract import AgentRoute, parse_model
from .._conversation_client.client import ConversationClient, ConversationClientFactory
from .._conversation_client.owners import for_caller
from .._errors import InvalidRequestError, MessageTooLargeError, UnsupportedMediaTypeError
from .event_stream import EVENT_STREAM_MEDIA_TYPE

JSON_MEDIA_TYPE = "application/json"
TEXT_MEDIA_TYPE = "text/plain"
IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,255}")
LAST_EVENT_ID_HEADER = "Last-Event-ID"
_EVENT_ID = re.compile(r"[0-9]{1,15}")
# JSON escaping can grow a message six-fold (\uXXXX); the rest of a body needs little room.
_BODY_GROWTH = 6
_BODY_SLACK = 4096

ModelT = TypeVar("ModelT", bound=BaseModel)


class RequestConversations:
    """How every HTTP front end reaches an agent's conversations for one request: the host's conversation client
    factory, behind the owner check of the request's caller (every conversation unless owners are on).

    Args:
        factory: The host's conversation client factory (`AgentFunctionApp._conversation_client` on Functions).
    """

    def __init__(self, factory: ConversationClientFactory) -> None:
        self._factory = factory

    def __call__(self, req: func.HttpRequest, client: Any, agent: AgentRoute) -> ConversationClient:
        """The agent's conversations as the request's caller may reach them, from the trigger's client binding.

        Raises:
            UnauthenticatedError: owners are on, and the request names no caller.
        """
        return for_caller(self._factory(client, agent), agent.owners, req.headers, req.params)


def media_type(req: func.HttpRequest) -> str:
    """The request's media type, lower-cased, without parameters ('' when absent)."""
    return (req.headers.get("content-type") or "").split(";", 1)[0].strip().lower()


def is_json_type(media: str) -> bool:
    """Whether a media type is JSON (`application/json` or a `+json` type)."""
    return media == JSON_MEDIA_TYPE or media.endswith("+json")


def body_text(req: func.HttpRequest, max_message_bytes: int) -> str:
    """The body as text, refused when larger than any valid request could be or not UTF-8.

    Raises:
        MessageTooLargeError: the body is over six times the message limit plus room for the other fields.
        InvalidRequestError: the body is not UTF-8 (code `invalid_encoding`).
    """
    body = req.get_body() or b""
    limit = max_message_bytes * _BODY_GROWTH + _BODY_SLACK
    if len(body) > limit:
        raise MessageTooLargeError(len(body), limit, what="request body")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(
            f"The body is not valid UTF-8 (byte {exc.start}). Send UTF-8 text.", code="invalid_encoding"
        ) from None


def json_value(text: str, expected: str) -> Any:
    """The JSON value a body holds; `expected` shows the caller what to send.

    Raises:
        InvalidRequestError: not JSON, or nested deeper than the parser goes (code `invalid_json`).
    """
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
        raise InvalidRequestError(f"The body is not valid JSON: {exc}. Send {expected}.", code="invalid_json") from None


def json_object(text: str, expected: str) -> dict[str, Any]:
    """The JSON object a body holds; `expected` shows the caller what shape to send.

    Raises:
        InvalidRequestError: not JSON, nested deeper than the parser goes, or not an object (code `invalid_json`);
            a string holding an unpaired surrogate (code `invalid_body`).
    """
    data = json_value(text, expected)
    if not isinstance(data, dict):
        raise InvalidRequestError(
            f"The body must be a JSON object like {expected}, got {type(data).__name__}.", code="invalid_json"
        )
    _refuse_unpaired_surrogates(data)
    return data


def json_body(req: func.HttpRequest, model: type[ModelT], max_message_bytes: int, expected: str) -> ModelT:
    """A JSON body (sent as JSON, or with no content type) validated as `model`.

    Raises:
        UnsupportedMediaTypeError: the body is sent as another media type.
        InvalidRequestError, MessageTooLargeError: as `body_text`, `json_object` and `parse_model`.
    """
    media = media_type(req)
    if media and not is_json_type(media):
        raise UnsupportedMediaTypeError(media, f"application/json ({expected})")
    return parse_model(model, json_object(body_text(req, max_message_bytes), expected))


def query(req: func.HttpRequest, model: type[ModelT], **context: Any) -> ModelT:
    """The query parameters validated as `model` (the first value of a repeated parameter counts)."""
    return parse_model(model, dict(req.params or {}), **context)


def idempotency_key(req: func.HttpRequest) -> str | None:
    """The `Idempotency-Key` header, when sent.

    Raises:
        InvalidRequestError: the key is not 1-255 visible ASCII characters (code `invalid_idempotency_key`).
    """
    key = req.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not IDEMPOTENCY_KEY_PATTERN.fullmatch(key):
        raise InvalidRequestError(
            f"The {IDEMPOTENCY_HEADER} header must be 1-255 visible ASCII characters (a UUID works well).",
            code="invalid_idempotency_key",
        )
    return key


def accepts_event_stream(req: func.HttpRequest) -> bool:
    """Whether the caller asks for an event stream (`Accept: text/event-stream`, unless refused with `q=0`)."""
    for item in (req.headers.get("accept") or "").split(","):
        media, *parameters = (part.strip().lower() for part in item.split(";"))
        if media == EVENT_STREAM_MEDIA_TYPE:
            return all(_quality(parameter) != 0 for parameter in parameters)
    return False


def _quality(parameter: str) -> float | None:
    name, _, value = parameter.partition("=")
    if name.strip() != "q":
        return None
    try:
        return float(value)
    except ValueError:
        return None


def last_event_id(req: func.HttpRequest) -> int:
    """The id of the last event the caller received (`Last-Event-ID`), 0 when it sent none.

    Raises:
        InvalidRequestError: the header is not a whole number of up to 15 digits (code `invalid_last_event_id`).
    """
    value = req.headers.get(LAST_EVENT_ID_HEADER)
    if value is None or value.strip() == "":
        return 0
    if not _EVENT_ID.fullmatch(value.strip()):
        raise InvalidRequestError(
            f"The {LAST_EVENT_ID_HEADER} header must be the id of an event this stream sent (a whole number), got "
            f"{value[:40]!r}. Send the last id you received, or no header to start from the beginning.",
            code="invalid_last_event_id",
        )
    return int(value)


def _refuse_unpaired_surrogates(data: Any) -> None:
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
