"""Run options as an orchestration passes them, turned into what can cross to the conversation entity.

The options are those of agent-framework-azurefunctions' `run(options=...)`: `response_format` (a pydantic model
class), `enable_tool_calls`, `wait_for_response`, and chat options forwarded to the agent. A class cannot cross the
entity boundary, so a model travels as its JSON schema, in the chat-style form core's OpenAI clients accept, and the
answer is validated against the class back in the orchestrator. Knows nothing about entities or HTTP.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .._contract import HOST_OWNED_RUN_OPTIONS

RESPONSE_FORMAT = "response_format"
ENABLE_TOOL_CALLS = "enable_tool_calls"
WAIT_FOR_RESPONSE = "wait_for_response"


@dataclass(frozen=True)
class RunOptions:
    """What a run sends the entity as its options, and what its answer is validated against.

    Attributes:
        sent: JSON chat options for the agent's run, or None when there are none.
        response_format: The requested structured output: a pydantic model class or a JSON schema mapping.
        tools_enabled: False when the run must not use the agent's tools (`enable_tool_calls=False`).
    """

    sent: dict[str, Any] | None
    response_format: type[BaseModel] | Mapping[str, Any] | None
    tools_enabled: bool = True


def run_options(options: Mapping[str, Any] | None) -> RunOptions:
    """Split the caller's options into what is sent to the entity and what the answer is validated against.

    Raises:
        ValueError: an option the host decides (`store`, `conversation_id`), or `wait_for_response=False`.
        TypeError: a `response_format` that is neither a pydantic model class nor a mapping, or an option whose
            value is not JSON.
    """
    remaining = dict(options or {})
    response_format = remaining.pop(RESPONSE_FORMAT, None)
    if remaining.pop(WAIT_FOR_RESPONSE, True) is False:
        raise ValueError(
            "run(options={'wait_for_response': False}) is not supported in agent-host orchestrations: yield the "
            "task to wait for the answer, or start the turn over HTTP with wait=false."
        )
    # The entity runs a turn without tools on a copy of the agent that has none (an empty tool list in the options
    # would be merged away, and a model may ignore tool_choice alone).
    tools_enabled = remaining.pop(ENABLE_TOOL_CALLS, True) is not False
    owned = [name for name in HOST_OWNED_RUN_OPTIONS if name in remaining]
    if owned:
        raise ValueError(
            f"run option(s) {', '.join(owned)} cannot be set per run: the host decides who keeps the "
            "conversation's history when the agent is registered."
        )
    if response_format is not None:
        remaining[RESPONSE_FORMAT] = response_format_schema(response_format)
    for name, value in remaining.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"run option {name!r} ({type(value).__name__}) cannot be sent to the agent's conversation: "
                "options travel as JSON, so pass JSON values (strings, numbers, lists, dicts)."
            ) from None
    return RunOptions(sent=remaining or None, response_format=response_format, tools_enabled=tools_enabled)


def response_format_schema(response_format: Any) -> dict[str, Any]:
    """The chat-style JSON schema response format for a pydantic model class; a mapping is passed as it is.

    Raises:
        TypeError: neither a pydantic model class nor a mapping.
    """
    if inspect.isclass(response_format) and issubclass(response_format, BaseModel):
        return {
            "type": "json_schema",
            "json_schema": {"name": response_format.__name__, "schema": response_format.model_json_schema()},
        }
    if isinstance(response_format, Mapping):
        return dict(response_format)
    kind = type(response_format).__name__
    raise TypeError(f"response_format must be a pydantic model class or a JSON schema mapping, not {kind}.")
