"""A workflow tool's `input`: its JSON type, derived from the start executor's input types, and the value a call sends.

Text when the start executor takes `str` (an agent node does); a boolean, number or array for a start executor that
takes one of those; a JSON object, described by its JSON schema, for a dataclass, pydantic model or mapping. The
value is coerced to the start executor's type by the run's own start (`WorkflowRuns.start`), as for HTTP. Knows core's
input types and the binding's property types; nothing of how a run executes.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter

from .._workflows.contract import type_label
from .tools import INPUT_PROPERTY, ToolProperty

# A schema longer than this would crowd the tool list a model reads: the type's name stands in for it.
MAX_SCHEMA_CHARS = 2000
_SCALARS: dict[type, str] = {bool: "boolean", int: "integer", float: "number"}
_START_OR_READ = "Send it to start a run; leave it out when you send runId."


@dataclass(frozen=True)
class WorkflowInput:
    """How a workflow tool takes its run's input.

    Attributes:
        type: The property's JSON type (`string`, `boolean`, `integer`, `number` or `object`).
        is_array: Whether the property is an array of `type`.
        description: What to send, for the model reading the tool list.
        decodes_text: Whether a string argument is JSON text of the value (models often send JSON as a string).
    """

    type: str
    is_array: bool
    description: str
    decodes_text: bool

    def tool_property(self) -> ToolProperty:
        """The tool's `input` property."""
        return ToolProperty(INPUT_PROPERTY, self.type, self.description, is_array=self.is_array)

    def value(self, argument: Any) -> Any:
        """The run's input from the call's argument: JSON text decoded where the input is not text."""
        if self.decodes_text and isinstance(argument, str):
            try:
                return json.loads(argument)
            except ValueError:
                return argument  # the start says what does not fit, naming the types it takes
        return argument


def workflow_input(workflow_name: str, input_types: Sequence[Any]) -> WorkflowInput:
    """The `input` of a workflow's tool, from its start executor's input types (in the executor's order)."""
    if str in input_types:
        return WorkflowInput("string", False, f"The text that starts a run of {workflow_name}. {_START_OR_READ}", False)
    if len(input_types) == 1:
        only = input_types[0]
        if only in _SCALARS:
            return WorkflowInput(
                _SCALARS[only],
                False,
                f"The {_SCALARS[only]} that starts a run of {workflow_name}. {_START_OR_READ}",
                True,
            )
        item = _array_item(only)
        if item is not None:
            return WorkflowInput(
                _SCALARS.get(item, "string" if item is str else "object"),
                True,
                f"The list that starts a run of {workflow_name}, {schema_text(only)}. {_START_OR_READ}",
                True,
            )
    described = " or ".join(schema_text(item) for item in input_types) or "nothing"
    kind = "object" if input_types and all(_is_object(item) for item in input_types) else "string"
    what = "A JSON object" if kind == "object" else "JSON text of a value"
    return WorkflowInput(
        kind, False, f"{what} that starts a run of {workflow_name}, {described}. {_START_OR_READ}", True
    )


def _array_item(cls: Any) -> Any | None:
    """The item type of a list type (`list[str]` gives `str`), or None for anything else."""
    origin = typing.get_origin(cls)
    if origin in (list, tuple, set, frozenset) or (isinstance(origin, type) and issubclass(origin, Sequence)):
        arguments = typing.get_args(cls)
        return arguments[0] if arguments else Any
    return None


def _is_object(cls: Any) -> bool:
    """Whether a type travels as a JSON object: a dataclass, a pydantic model or a mapping."""
    if dataclasses.is_dataclass(cls) or (isinstance(cls, type) and issubclass(cls, (BaseModel, Mapping))):
        return True
    origin = typing.get_origin(cls)
    return isinstance(origin, type) and issubclass(origin, Mapping)


def schema_text(cls: Any) -> str:
    """`of schema {...}` (compact, without titles), or `of type Name` when it has none or it is too long to show."""
    try:
        schema = _without_titles(TypeAdapter(cls).json_schema())
    except Exception:  # pydantic refuses arbitrary classes with several error types; the name still helps
        return f"of type {type_label(cls)}"
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    return f"of schema {text}" if len(text) <= MAX_SCHEMA_CHARS else f"of type {type_label(cls)}"


def _without_titles(schema: Any) -> Any:
    """A JSON schema without the `title` names pydantic adds (they repeat the field names).

    Only a string `title` is a schema's name; a field called `title` maps to a schema (a dict) and stays.
    """
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: _without_titles(value) for key, value in schema.items() if not _is_name(key, value)}


def _is_name(key: str, value: Any) -> bool:
    """Whether a schema entry is pydantic's name for the schema (a field named `title` maps to a dict)."""
    return key == "title" and isinstance(value, str)
