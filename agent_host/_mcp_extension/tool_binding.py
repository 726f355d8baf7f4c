"""A tool as the Functions MCP extension serves it from its `mcpToolTrigger` binding, whichever host calls it: its
`tools/list` entry built from the binding's `toolProperties`, and a tool function's return value read as a
`CallToolResult` (`SimpleToolReturnValueBinder` and, under `useResultSchema`, `ToolReturnValueBinder`).

Knows the binding's fields and the result envelope; nothing of how a tool function is invoked or of JSON-RPC.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The envelope a function returns under `useResultSchema`: `type` says how to read `content`.
CALL_TOOL_RESULT_TYPE = "call_tool_result"
MULTI_CONTENT_RESULT = "multi_content_result"


class ToolResultError(ValueError):
    """A tool function returned something the extension could not turn into a tool result."""


@dataclass
class ToolBinding:
    """What a tool's `mcpToolTrigger` binding declares.

    Attributes:
        tool_name: The tool's name, as clients call it.
        description: The tool's description ('' when none).
        properties: The binding's `toolProperties` entries.
        use_result_schema: Whether the function returns a whole tool result (the envelope) instead of text.
    """

    tool_name: str
    description: str
    properties: list[dict[str, Any]]
    use_result_schema: bool

    @property
    def required(self) -> list[str]:
        """Names of the required properties, which the extension checks before it calls the function."""
        return [str(p["propertyName"]) for p in self.properties if p.get("isRequired")]

    def listing(self) -> dict[str, Any]:
        """The tool as `tools/list` shows it: name, description and the input schema built from its properties."""
        schema_properties: dict[str, Any] = {}
        for prop in self.properties:
            kind: dict[str, Any] = {"type": prop.get("propertyType") or "string"}
            if prop.get("enumValues"):
                kind["enum"] = list(prop["enumValues"])
            entry = {"type": "array", "items": kind} if prop.get("isArray") else dict(kind)
            entry["description"] = prop.get("description") or ""
            schema_properties[str(prop["propertyName"])] = entry
        schema = {"type": "object", "properties": schema_properties, "required": self.required}
        listing: dict[str, Any] = {"name": self.tool_name, "inputSchema": schema}
        if self.description:  # the extension leaves a missing description out, as it does every null member
            listing["description"] = self.description
        return listing

    def result(self, returned: str) -> dict[str, Any]:
        """The `CallToolResult` (JSON-ready) the extension makes of what the tool function returned.

        Raises:
            ToolResultError: under `useResultSchema`, the function returned an envelope the extension cannot read.
        """
        if not self.use_result_schema:
            return {"content": [{"type": "text", "text": returned}]}
        return _enveloped_result(returned)


def _enveloped_result(returned: str) -> dict[str, Any]:
    """Read a `useResultSchema` return value: `{"type", "content", "structuredContent"}`, inner parts as JSON text.

    Raises:
        ToolResultError: it is not such an envelope.
    """
    try:
        envelope = json.loads(returned)
        kind = str(envelope["type"]).lower()
        content = json.loads(envelope["content"])
        structured = envelope.get("structuredContent")
    except (ValueError, TypeError, KeyError) as exc:
        raise ToolResultError(f"not a tool result envelope ({type(exc).__name__}: {exc})") from None
    if kind == CALL_TOOL_RESULT_TYPE:
        if not isinstance(content, dict):
            raise ToolResultError("a call_tool_result envelope must hold a CallToolResult object")
        return content
    blocks = content if kind == MULTI_CONTENT_RESULT else [content]
    if not isinstance(blocks, list) or not blocks or not all(isinstance(block, dict) for block in blocks):
        raise ToolResultError(f"a {kind} envelope holds no content blocks")
    result: dict[str, Any] = {"content": blocks}
    if structured:
        try:
            result["structuredContent"] = json.loads(structured)
        except (ValueError, TypeError) as exc:
            raise ToolResultError(f"structuredContent is not JSON ({exc})") from None
    return result
