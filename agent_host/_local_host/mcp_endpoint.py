"""The MCP endpoint the Functions MCP extension serves, over its two transports, at ``/runtime/webhooks/mcp``.

Streamable HTTP (``POST /runtime/webhooks/mcp``) is ``_mcp_extension/streamable_http.py``'s, which the standalone
worker serves too. Legacy SSE (``GET .../mcp/sse``, then ``POST .../mcp/message?azmcpcs=...``): the event
stream first names the message endpoint (relative, as the extension does by default), then carries every answer.
Keys are checked by the server before a request gets here. Knows HTTP and the transports, not what tools do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web

from .._mcp_extension.protocol import Caller, McpProtocolError, McpServer, parse_message
from .._mcp_extension.streamable_http import (
    NO_CACHE,
    SSE_MEDIA_TYPE,
    McpReply,
    joined_headers,
    method_not_allowed,
    rpc_error,
    sse_event,
    streamable_reply,
    unsupported_media_type,
)
from .errors import error_response
from .listener import read_body
from .request_media import declares_json

logger = logging.getLogger(__name__)

MCP_SEGMENTS = ("runtime", "webhooks", "mcp")
SSE_SEGMENT = "sse"
MESSAGE_SEGMENT = "message"
CLIENT_STATE_QUERY = "azmcpcs"
SSE_TRANSPORT = "http-sse"
KEEPALIVE_SECONDS = 15.0
"""How often an idle SSE stream gets a comment line, which also notices a client that went away."""
MAX_OWED_ANSWERS = 64
"""Answers one SSE session may be owed at once, being worked on or not yet read off its stream: a client that posts
past it without reading its stream loses the session, so answers never pile up for a stream nobody reads."""
SSE_SEND_BUFFER_BYTES = 16 * 1024
"""The kernel send buffer of an SSE stream's socket, fixed and small: left to autotuning, loopback's grows to megabytes,
so how many answers a stream nobody reads absorbs before the owed bound applies would depend on the machine. What it
absorbs is this buffer (which Linux doubles) and the client's unread receive buffer, whatever the pace of posts and
answers: when answers keep up with the posts, a client that never reads is closed after those bytes and
MAX_OWED_ANSWERS more (measured: 236 answers of 1.1 KB, 300 posts in all; at 128 KiB it was 413 and 477)."""
REMEMBERED_CLOSED_SESSIONS = 256


@dataclass
class _SseSession:
    """One open legacy SSE stream: where answers to its POSTed messages go."""

    client_id: str
    transport: asyncio.BaseTransport | None = None
    answers: asyncio.Queue[dict[str, Any] | None] = field(default_factory=asyncio.Queue)
    answering: set[asyncio.Task[None]] = field(default_factory=set)
    client_info: dict[str, Any] | None = None
    closed_because: str | None = None

    def owed(self) -> int:
        """Answers being worked on or waiting to be written to the stream."""
        return len(self.answering) + self.answers.qsize()


class McpEndpoint:
    """Serves ``/runtime/webhooks/mcp`` (Streamable HTTP) and its legacy SSE pair for one :class:`McpServer`."""

    def __init__(self, server: McpServer) -> None:
        """Serve this MCP server.

        Args:
            server: Answers the JSON-RPC messages.
        """
        self.server = server
        self._sessions: dict[str, _SseSession] = {}
        self._closed: OrderedDict[str, str] = OrderedDict()  # why recently closed sessions were closed
        self._answering: set[asyncio.Task[None]] = set()

    async def handle(self, request: web.BaseRequest, segments: list[str]) -> web.StreamResponse:
        """Serve one request below ``/runtime/webhooks/mcp``.

        Args:
            request: The incoming request (its key already checked).
            segments: Path segments after ``runtime/webhooks/mcp``.

        Returns:
            The response.
        """
        rest = [segment.lower() for segment in segments]
        if not rest:
            return await self._streamable(request)
        if rest == [SSE_SEGMENT]:
            return await self._sse(request)
        if rest == [MESSAGE_SEGMENT]:
            return await self._message(request)
        return error_response(
            404, "not_found", f"No MCP endpoint at {request.path}; use /runtime/webhooks/mcp (or .../mcp/sse)."
        )

    async def close(self) -> None:
        """End every open SSE stream and drop the answers still being worked on (the host is stopping)."""
        for session in list(self._sessions.values()):
            session.answers.put_nowait(None)
        for task in list(self._answering):
            task.cancel()
        await asyncio.gather(*self._answering, return_exceptions=True)

    async def _streamable(self, request: web.BaseRequest) -> web.StreamResponse:
        """Streamable HTTP, as the worker serves it too (`_mcp_extension/streamable_http.py`)."""
        reply = await streamable_reply(
            self.server, request.method, request.path, request.headers, lambda: read_body(request)
        )
        return _response(reply)

    # -- legacy SSE -----------------------------------------------------------------------------------------------

    async def _sse(self, request: web.BaseRequest) -> web.StreamResponse:
        """Open an event stream: the message endpoint first, then every answer, until the client or the host leaves."""
        if request.method.upper() != "GET":
            return _method_not_allowed(request, "GET", "The SSE endpoint is opened with GET.")
        session = _SseSession(uuid.uuid4().hex, request.transport)
        self._sessions[session.client_id] = session
        endpoint = f"{MESSAGE_SEGMENT}?{CLIENT_STATE_QUERY}={session.client_id}"
        key = request.query.get("code") or request.headers.get("x-functions-key")
        if key:
            # As the extension does: the message endpoint carries the key the stream was opened with.
            endpoint += f"&code={quote(key, safe='')}"
        response = web.StreamResponse(status=200, headers={**NO_CACHE, "Content-Type": SSE_MEDIA_TYPE})
        _fix_send_buffer(request.transport)
        try:
            await response.prepare(request)
            await response.write(sse_event("endpoint", endpoint))
            await self._stream_answers(request, response, session)
        except ConnectionError:
            logger.debug("SSE client %s went away", session.client_id)
        finally:
            self._sessions.pop(session.client_id, None)
        return response

    async def _stream_answers(
        self, request: web.BaseRequest, response: web.StreamResponse, session: _SseSession
    ) -> None:
        """Write the session's answers as they come, with a comment line when idle, until told to stop."""
        while True:
            try:
                answer = await asyncio.wait_for(session.answers.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    return
                await response.write(b": keep-alive\n\n")
                continue
            if answer is None:
                if session.closed_because is not None:
                    await response.write(f": session closed: {session.closed_because}\n\n".encode())
                return
            await response.write(sse_event("message", json.dumps(answer, ensure_ascii=False)))

    async def _message(self, request: web.BaseRequest) -> web.StreamResponse:
        """Accept one message for an open SSE stream (202); its answer goes to that stream."""
        if request.method.upper() != "POST":
            return _method_not_allowed(request, "POST", "Messages for an SSE session are POSTed.")
        client_id = request.query.get(CLIENT_STATE_QUERY)
        if not client_id:
            return error_response(
                400, "missing_session", "Missing service context. Connect to the /sse endpoint to start a session."
            )
        if not declares_json(request):
            return _response(unsupported_media_type())
        session = self._sessions.get(client_id)
        if session is None and client_id in self._closed:
            return _session_closed(client_id, self._closed[client_id])
        if session is None:
            return error_response(
                400,
                "unknown_session",
                f"No active session for client {client_id[:80]!r}. Connect to the /sse endpoint to start a session.",
            )
        try:
            message = parse_message(await read_body(request))
        except McpProtocolError as error:
            return _response(rpc_error(400, error.code, error.message))
        if session.owed() >= MAX_OWED_ANSWERS:
            reason = (
                f"it was owed {MAX_OWED_ANSWERS} answers its event stream had not taken (a client must read the "
                "stream its answers arrive on)"
            )
            self._close_session(session, reason)
            return _session_closed(client_id, reason)
        if message.get("method") == "initialize" and isinstance(message.get("params"), dict):
            info = message["params"].get("clientInfo")
            session.client_info = info if isinstance(info, dict) else None
        caller = Caller(SSE_TRANSPORT, session.client_id, joined_headers(request.headers), session.client_info)
        task = asyncio.create_task(self._answer_on_stream(session, message, caller))
        for tasks in (self._answering, session.answering):
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        return web.Response(status=202, text="Accepted")

    def _close_session(self, session: _SseSession, reason: str) -> None:
        """End a session whose client does not keep up: drop what it is owed and end its stream."""
        session.closed_because = reason
        self._sessions.pop(session.client_id, None)
        self._closed[session.client_id] = reason
        while len(self._closed) > REMEMBERED_CLOSED_SESSIONS:
            self._closed.popitem(last=False)
        for task in session.answering:
            task.cancel()
        while not session.answers.empty():
            session.answers.get_nowait()
        session.answers.put_nowait(None)
        transport = session.transport
        if isinstance(transport, asyncio.WriteTransport) and transport.get_write_buffer_size() > 0:
            # The stream is blocked on a client that reads nothing: it would never get to the end marker.
            transport.abort()
        logger.warning("closed MCP SSE session %s: %s", session.client_id, reason)

    async def _answer_on_stream(self, session: _SseSession, message: dict[str, Any], caller: Caller) -> None:
        """Answer a message and queue the answer on its stream (gone streams drop it)."""
        answer = await self.server.answer(message, caller)
        if answer is not None and session.client_id in self._sessions:
            session.answers.put_nowait(answer)


def _fix_send_buffer(transport: asyncio.BaseTransport | None) -> None:
    """Give the stream's socket a fixed send buffer (SSE_SEND_BUFFER_BYTES), where it has a socket."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SSE_SEND_BUFFER_BYTES)


def _session_closed(client_id: str, reason: str) -> web.Response:
    return error_response(
        400,
        "session_closed",
        f"The session of client {client_id[:80]!r} was closed: {reason}. Connect to the /sse endpoint to start a new "
        "one.",
    )


def _method_not_allowed(request: web.BaseRequest, allowed: str, why: str) -> web.Response:
    """405 with ``Allow``, in the local host's JSON error body."""
    return _response(method_not_allowed(request.method, request.path, allowed, why))


def _response(reply: McpReply) -> web.Response:
    """The aiohttp response of a transport-neutral reply."""
    return web.Response(status=reply.status, body=reply.body, headers=reply.headers)
