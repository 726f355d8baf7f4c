"""MCP tool results as a tool function returns them: a `CallToolResult` in the extension's result envelope.

With `useResultSchema` the Functions MCP extension reads a function's return value as
`{"type": "call_tool_result", "content": "<CallToolResult JSON>"}` and hands the `CallToolResult` to the client as
it is, `isError` included. Knows the MCP result shape, not how a turn ran.
"""

from __future__ import annotations

import json
from typing import Any

from .._mcp_extension.tool_binding import CALL_TOOL_RESULT_TYPE


def tool_result(texts: list[str], structured: dict[str, Any], *, is_error: bool) -> str:
    """A `CallToolResult` with one text block per text and the same facts as structured content, enveloped.

    Clients that pass only text blocks to their model still see everything; clients that read
    `structuredContent` get the facts without parsing prose.
    """
    result = {
        "content": [{"type": "text", "text": text} for text in texts],
        "structuredContent": structured,
        "isError": is_error,
    }
    return json.dumps({"type": CALL_TOOL_RESULT_TYPE, "content": json.dumps(result, ensure_ascii=False)})


def continue_hint(tool_name: str, session_id: str) -> str:
    """The text block telling a caller how to continue the conversation."""
    return (
        f'sessionId: {session_id} (call {tool_name} again with sessionId "{session_id}" to continue this conversation)'
    )


def answer_result(
    tool_name: str, session_id: str, turn_id: str, text: str, approval_requests: list[dict[str, Any]]
) -> str:
    """A completed turn: its reply text first, then how to continue the conversation.

    A turn that ended asking for tool approvals says so: MCP has no way to answer them, the HTTP API does.
    """
    structured: dict[str, Any] = {"status": "completed", "response": text, "sessionId": session_id, "turnId": turn_id}
    texts = [text, continue_hint(tool_name, session_id)]
    if approval_requests:
        structured["approvalRequests"] = approval_requests
        asked = ", ".join(f"{item['toolName']} (approval id {item['id']})" for item in approval_requests)
        texts.append(
            f"The agent waits for approval before it calls {asked}. Answer through the HTTP API: POST "
            f'/api/agents/{tool_name}/conversations/{session_id}/turns with {{"approvals": [{{"id": "...", '
            '"approved": true}]}.'
        )
    return tool_result(texts, structured, is_error=False)


def error_result(error: dict[str, str], *, session_id: str | None = None, turn_id: str | None = None) -> str:
    """A call that failed, with the error's code and message (a failed turn's, or the call's own)."""
    structured: dict[str, Any] = {"status": "failed", "error": error}
    if session_id is not None:
        structured["sessionId"] = session_id
    if turn_id is not None:
        structured["turnId"] = turn_id
    return tool_result([f"{error['code']}: {error['message']}"], structured, is_error=True)


def pending_result(tool_name: str, session_id: str, turn_id: str, idempotency_key: str, waited: float) -> str:
    """A turn still running when the call stopped waiting: how to collect its answer without running it twice.

    It is an error result, so a caller that checks `isError` does not take "still running" for the answer.
    """
    text = (
        f"The {tool_name} agent is still working on this turn after {waited:g} s (conversation {session_id}, turn "
        f'{turn_id}). Call {tool_name} again with the same query, sessionId "{session_id}" and idempotencyKey '
        f'"{idempotency_key}" to receive its answer; the agent does not run the turn twice.'
    )
    structured = {
        "status": "pending",
        "sessionId": session_id,
        "turnId": turn_id,
        "idempotencyKey": idempotency_key,
    }
    return tool_result([text], structured, is_error=True)
