"""What a turn request may send besides text: chat options on an allow-list, and a message's contents (text, files).

Options arrive camelCase and leave as core's chat option names (`maxTokens` -> `max_tokens`), each checked against its
range, so a typo is a 400 rather than an option silently sent to the model or dropped. Contents arrive in core's
`Content.to_dict()` shape: text, a file by `http(s)` URL, or a file inline as a base64 data URI. Knows core's option
and content shapes, nothing about entities or HTTP.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

TOOL_MODES = ("auto", "none", "required")
MAX_CONTENTS = 16
_DATA_URI = re.compile(r"data:(?P<media_type>[\w.+-]+/[\w.+-]+);base64,(?P<data>[A-Za-z0-9+/=]*)")
_MEDIA_TYPE = re.compile(r"[\w.+-]+/[\w.+-]+")
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def _number(low: float, high: float, *, integer: bool = False) -> Callable[[str, Any], float]:
    def check(name: str, value: Any) -> float:
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
            kind = "a whole number" if integer else "a number"
            raise ValueError(f"options.{name} must be {kind} from {low:g} to {high:g}, got {value!r}")
        if not low <= value <= high:
            raise ValueError(f"options.{name} must be from {low:g} to {high:g}, got {value!r}")
        return value

    return check


def _tool_choice(name: str, value: Any) -> Any:
    if value in TOOL_MODES:
        return value
    if (
        isinstance(value, Mapping)
        and value.get("mode") == "required"
        and set(value) == {"mode", "requiredFunctionName"}
    ):
        function = value["requiredFunctionName"]
        if isinstance(function, str) and _FUNCTION_NAME.fullmatch(function):
            return {"mode": "required", "required_function_name": function}
    raise ValueError(
        f'options.{name} must be "auto", "none", "required" or {{"mode": "required", "requiredFunctionName": '
        f'"<tool>"}}, got {value!r}'
    )


# Each allowed option: its wire name, core's chat option name, and its check.
CHAT_OPTIONS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "temperature": ("temperature", _number(0, 2)),
    "maxTokens": ("max_tokens", _number(1, 1_000_000, integer=True)),
    "topP": ("top_p", _number(0, 1)),
    "seed": ("seed", _number(-(2**63), 2**63 - 1, integer=True)),
    "toolChoice": ("tool_choice", _tool_choice),
}


def chat_options_of(options: Mapping[str, Any]) -> dict[str, Any]:
    """Core's chat options for a turn's `options` (camelCase, allow-listed).

    Raises:
        ValueError: an option not on the allow-list (the message lists the allowed ones), or a value out of range.
    """
    unknown = sorted(set(options) - set(CHAT_OPTIONS))
    if unknown:
        raise ValueError(
            f"options {', '.join(unknown)} cannot be set per turn; the ones that can are {', '.join(CHAT_OPTIONS)}"
        )
    chat: dict[str, Any] = {}
    for name, value in options.items():
        core_name, check = CHAT_OPTIONS[name]
        chat[core_name] = check(name, value)
    return chat


def message_contents(contents: list[Any]) -> list[dict[str, Any]]:
    """A message's contents, checked, in core's `Content.to_dict()` form.

    Raises:
        ValueError: not 1-16 contents, an unknown type or field, a URL that is not `http(s)`, a media type missing
            or malformed, or a data URI that is not base64.
    """
    if not 1 <= len(contents) <= MAX_CONTENTS:
        raise ValueError(f"contents must hold 1 to {MAX_CONTENTS} contents, got {len(contents)}")
    return [_content(index, item) for index, item in enumerate(contents)]


def contents_bytes(contents: list[dict[str, Any]]) -> int:
    """The size a message's contents count against the message limit: their text and URIs (data URIs in full)."""
    return sum(len(str(item.get("text") or item.get("uri") or "").encode("utf-8")) for item in contents)


def _content(index: int, item: Any) -> dict[str, Any]:
    where = f"contents[{index}]"
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be an object, got {type(item).__name__}")
    kind = item.get("type")
    fields = {"text": {"type", "text"}, "uri": {"type", "uri", "media_type"}, "data": {"type", "uri", "media_type"}}
    if kind not in fields:
        raise ValueError(f'{where}.type must be "text", "uri" or "data", got {kind!r}')
    extra = sorted(set(item) - fields[kind])
    if extra:
        raise ValueError(
            f"{where} ({kind}) has unknown field(s) {', '.join(extra)}; it takes {', '.join(sorted(fields[kind]))}"
        )
    if kind == "text":
        if not isinstance(item.get("text"), str) or not item["text"].strip():
            raise ValueError(f"{where}.text must be non-empty text")
        return {"type": "text", "text": item["text"]}
    uri = item.get("uri")
    if not isinstance(uri, str):
        raise ValueError(f"{where}.uri must be a string")
    if kind == "uri":
        media_type = item.get("media_type")
        if not re.match(r"https?://[^\s]+$", uri):
            raise ValueError(
                f"{where}.uri must be an http(s) URL (send a file's bytes as a data content), got {uri[:80]!r}"
            )
        if not isinstance(media_type, str) or not _MEDIA_TYPE.fullmatch(media_type):
            raise ValueError(f'{where}.media_type must name the file\'s type, such as "image/png"')
        return {"type": "uri", "uri": uri, "media_type": media_type}
    match = _DATA_URI.fullmatch(uri)
    if match is None:
        raise ValueError(f'{where}.uri must be a base64 data URI ("data:image/png;base64,..."), got {uri[:40]!r}')
    try:
        base64.b64decode(match["data"], validate=True)
    except binascii.Error:
        raise ValueError(f"{where}.uri holds data that is not valid base64") from None
    media_type = item.get("media_type", match["media_type"])
    if media_type != match["media_type"]:
        raise ValueError(f"{where}.media_type {media_type!r} differs from the data URI's {match['media_type']!r}")
    return {"type": "data", "uri": uri, "media_type": media_type}
