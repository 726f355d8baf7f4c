"""The local host's own error responses: every error it answers itself has the body ``{"error": {"code", "message"}}``.

Errors the app's functions return are theirs; this module renders only what the local host answers on its own.
"""

from __future__ import annotations

import json

from aiohttp import web


def error_response(status: int, code: str, message: str, *, headers: dict[str, str] | None = None) -> web.Response:
    """Build the JSON error body every local-host error uses.

    Args:
        status: HTTP status code.
        code: Machine-readable error code.
        message: Human-readable explanation.
        headers: Extra response headers.

    Returns:
        A response with body ``{"error": {"code": code, "message": message}}``.
    """
    body = json.dumps({"error": {"code": code, "message": message}})
    return web.Response(status=status, text=body, content_type="application/json", headers=headers)
