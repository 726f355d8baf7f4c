"""Structured output asked for as a JSON schema: the schema checked, and an answer parsed and validated against it.

A caller's schema travels to the model as core's chat-style response format (`{"type": "json_schema",
"json_schema": {"name", "schema"}}`, which core's OpenAI clients send as they are); core then only `json.loads` the
answer, so the answer is validated against the schema here. Knows JSON Schema, nothing about entities or HTTP.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

JSON_SCHEMA_FORMAT = "json_schema"
DEFAULT_SCHEMA_NAME = "response"
# The schema name OpenAI's structured outputs accept.
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# How many of an answer's problems a failed turn names.
_MAX_PROBLEMS = 5


def response_format_of(value: Any) -> dict[str, Any]:
    """Core's chat-style response format for a JSON schema, or for that form itself (checked as it is).

    Raises:
        ValueError: `value` is not a JSON object, not a valid JSON Schema (draft 2020-12), or the form's name is not
            1-64 letters, digits, `_` or `-`.
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"it must be a JSON schema object, got {type(value).__name__}")
    if value.get("type") == JSON_SCHEMA_FORMAT:
        section = value.get(JSON_SCHEMA_FORMAT)
        if not isinstance(section, Mapping) or not isinstance(section.get("schema"), Mapping):
            raise ValueError('the "json_schema" form needs {"json_schema": {"name": "...", "schema": {...}}}')
        name = section.get("name", DEFAULT_SCHEMA_NAME)
        if not isinstance(name, str) or not _SCHEMA_NAME.fullmatch(name):
            raise ValueError(f"json_schema.name must be 1-64 letters, digits, '_' or '-', got {name!r}")
        form = {"type": JSON_SCHEMA_FORMAT, JSON_SCHEMA_FORMAT: {**section, "name": name}}
    else:
        form = {"type": JSON_SCHEMA_FORMAT, JSON_SCHEMA_FORMAT: {"name": DEFAULT_SCHEMA_NAME, "schema": dict(value)}}
    try:
        Draft202012Validator.check_schema(schema_of(form))
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path)
        at = f" (at {where})" if where else ""
        raise ValueError(f"it is not a valid JSON schema: {exc.message}{at}") from None
    return form


def schema_of(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON schema inside a chat-style response format."""
    return dict(response_format[JSON_SCHEMA_FORMAT]["schema"])


def structured_value(text: str, response_format: Mapping[str, Any]) -> Any:
    """The answer's JSON value, once it validates against the response format's schema.

    Raises:
        ValueError: the answer is not JSON, or names up to five ways it does not match the schema.
    """
    try:
        value = json.loads(text)
    except ValueError as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ValueError(f"the answer is not JSON ({exc}): {shown!r}") from None
    errors = sorted(Draft202012Validator(schema_of(response_format)).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        problems = [f"{_path(error.path)}: {_short(error.message)}" for error in errors]
        more = f" (and {len(problems) - _MAX_PROBLEMS} more)" if len(problems) > _MAX_PROBLEMS else ""
        raise ValueError("; ".join(problems[:_MAX_PROBLEMS]) + more)
    return value


def _short(problem: str, limit: int = 200) -> str:
    # jsonschema quotes the offending value, which may be most of the answer.
    return problem if len(problem) <= limit else problem[: limit - 3] + "..."


def _path(path: Any) -> str:
    return "/".join(str(part) for part in path) or "the answer"
