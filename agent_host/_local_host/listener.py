"""One HTTP listener of the local host: aiohttp's low-level server, with the local host's limits and error bodies.

It answers everything it refuses itself (unparsable or oversized request heads, request bodies too slow or too large,
handler crashes) with the JSON error body, times out request heads and bodies that stall, and writes one escaped
access-log line per request. Knows nothing about functions, entities or routes: a handler decides what to answer.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong

from .errors import error_response
from .log_text import loggable

logger = logging.getLogger(__name__)

MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body the local host accepts; the app enforces its own, smaller limits."""

MAX_HEAD_LINE_BYTES = 8190
"""Longest request line or header line (aiohttp's limit); longer ones are refused with ``request_head_too_large``."""

MAX_HEADERS = 128
"""Most headers in one request (aiohttp's limit)."""

_HTTP_SHUTDOWN_TIMEOUT_SECONDS = 5.0
_LINGER_SECONDS = 1.0  # how long unread body bytes are drained after an early answer before the connection closes

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class RequestDeadlines:
    """How long a client may take to send a request, so stalled connections cannot pile up.

    Attributes:
        head_seconds: From a connection's start, or the end of its previous response, until a complete request head
            has arrived; the connection is closed otherwise (idle keep-alive connections are closed after it too).
        body_seconds: From the moment a handler starts reading the body until all of it has arrived; the request is
            answered 408 ``request_timeout`` and the connection closed otherwise.
    """

    head_seconds: float = 20.0
    body_seconds: float = 60.0

    def __post_init__(self) -> None:
        """Refuse deadlines that are not positive.

        Raises:
            ValueError: If a deadline is zero or negative.
        """
        if self.head_seconds <= 0 or self.body_seconds <= 0:
            raise ValueError(f"request deadlines must be positive, got {self}")


DEFAULT_REQUEST_DEADLINES = RequestDeadlines()


class ListenAddressError(OSError):
    """The listener's address could not be bound: its port is in use, the address is not this machine's, or the port
    is one this process may not use. `errno` is the operating system's (``errno.EADDRINUSE`` for a port in use)."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        super().__init__(cause.errno, f"cannot listen on {host}:{port}: {cause.strerror or cause}")
        self.host = host
        self.port = port


class Listener:
    """Serves one handler on one address until stopped."""

    def __init__(
        self,
        handler: Handler,
        *,
        host: str,
        port: int,
        deadlines: RequestDeadlines,
        access_log_level: int = logging.INFO,
    ) -> None:
        """Configure the listener; nothing is bound until :meth:`start`.

        Args:
            handler: Answers each request; errors it raises become JSON error responses.
            host: Address to bind.
            port: Port to bind; 0 picks a free one.
            deadlines: How long clients may take to send a request.
            access_log_level: Level of the one line logged per request.
        """
        self._handler = handler
        self._host = host
        self._port = port
        self._deadlines = deadlines
        self._access_log_level = access_log_level
        self._runner: web.ServerRunner | None = None
        self.port: int | None = None

    def check_address(self) -> None:
        """Fail now if the address cannot be bound, before anything slower starts (a port in use says so in one line
        instead of after the worker's web server has started and stopped again).

        Raises:
            ListenAddressError: If the address cannot be bound.
        """
        if self._port == 0:
            return
        try:
            for family, _, _, _, address in socket.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM):
                # As aiohttp binds: address reuse on, so a port in TIME_WAIT is not "in use".
                socket.create_server(address[:2], family=family).close()
        except OSError as exc:
            raise ListenAddressError(self._host, self._port, exc) from exc

    async def start(self) -> None:
        """Bind the address and start serving.

        Raises:
            ListenAddressError: If the address cannot be bound.
        """
        server = _Server(self._serve, deadlines=self._deadlines)
        runner = web.ServerRunner(server, shutdown_timeout=_HTTP_SHUTDOWN_TIMEOUT_SECONDS)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ListenAddressError(self._host, self._port, exc) from exc
        except BaseException:
            await runner.cleanup()
            raise
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self._port
        self._runner = runner

    async def stop(self) -> None:
        """Stop accepting connections and let requests in flight finish (up to 5 s). Safe to call twice."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _serve(self, request: web.BaseRequest) -> web.StreamResponse:
        """Call the handler, render what it raises as JSON, and log one line.

        Args:
            request: The incoming request.

        Returns:
            The handler's response, or a JSON error.
        """
        started = time.perf_counter()
        if isinstance(request.protocol, _Protocol):
            request.protocol.head_arrived()
        response: web.StreamResponse
        try:
            response = await self._handler(request)
        except web.HTTPException as exc:
            response = error_response(exc.status, _CODES.get(exc.status, "bad_request"), exc.reason)
            if exc.status == 408:
                response.force_close()  # the client stalled mid-body: do not wait for the rest of it
        except Exception:
            logger.exception("the local host failed on %s %s", request.method, loggable(request.rel_url.raw_path))
            response = error_response(500, "internal_error", "The local host failed; see its log.")
        elapsed_ms = (time.perf_counter() - started) * 1000
        logger.log(
            self._access_log_level,
            "%s %s %d %.1fms",
            loggable(request.method),
            loggable(request.rel_url.raw_path),
            response.status,
            elapsed_ms,
        )
        return response


_CODES = {
    400: "bad_request",
    408: "request_timeout",
    413: "payload_too_large",
    500: "internal_error",
    504: "handler_timeout",
}


async def read_body(request: web.BaseRequest) -> bytes:
    """Read a request's whole body within its listener's body deadline.

    Args:
        request: The request.

    Returns:
        The body.

    Raises:
        web.HTTPRequestTimeout: The body did not arrive in time.
        web.HTTPRequestEntityTooLarge: It is over 32 MB.
    """
    seconds = (
        request.protocol.deadlines.body_seconds
        if isinstance(request.protocol, _Protocol)
        else DEFAULT_REQUEST_DEADLINES.body_seconds
    )
    try:
        async with asyncio.timeout(seconds):
            return await request.read()
    except TimeoutError:
        raise web.HTTPRequestTimeout(
            reason=f"The request body did not arrive within {seconds:g} s; the connection is closed."
        ) from None


class _Server(web.Server):
    """aiohttp's low-level server, handing each connection to :class:`_Protocol`."""

    def __init__(self, handler: Handler, *, deadlines: RequestDeadlines) -> None:
        """Create the server.

        Args:
            handler: Answers each request.
            deadlines: Passed to every connection.
        """
        super().__init__(handler, request_factory=self._make_limited_request)
        self._deadlines = deadlines

    def _make_limited_request(
        self,
        message: Any,
        payload: Any,
        protocol: web.RequestHandler,
        writer: Any,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        """Build a request whose body may be up to 32 MB (aiohttp's default is 1 MB)."""
        return web.BaseRequest(
            message, payload, protocol, writer, task, asyncio.get_running_loop(), client_max_size=MAX_REQUEST_BODY_BYTES
        )

    def __call__(self) -> web.RequestHandler:
        """Create the protocol for one new connection."""
        return _Protocol(
            self,
            loop=asyncio.get_running_loop(),
            deadlines=self._deadlines,
            access_log=None,
            keepalive_timeout=self._deadlines.head_seconds,
            lingering_time=_LINGER_SECONDS,
            max_line_size=MAX_HEAD_LINE_BYTES,
            max_field_size=MAX_HEAD_LINE_BYTES,
            max_headers=MAX_HEADERS,
        )


class _Protocol(web.RequestHandler):
    """One connection: closed when a request head stalls; errors aiohttp answers itself rendered as JSON."""

    def __init__(
        self, manager: web.Server, *, loop: asyncio.AbstractEventLoop, deadlines: RequestDeadlines, **kwargs: Any
    ) -> None:
        """Create the connection's protocol.

        Args:
            manager: The server.
            loop: The event loop.
            deadlines: How long the client may take to send a request.
            **kwargs: aiohttp's own connection settings.
        """
        super().__init__(manager, loop=loop, **kwargs)
        self.deadlines = deadlines
        self._timer_loop = loop
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start waiting for the first request head."""
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: BaseException | None) -> None:
        """Forget the head deadline of a closed connection."""
        self.head_arrived()
        super().connection_lost(exc)

    async def finish_response(self, *args: Any, **kwargs: Any) -> Any:
        """Send the response; then the next request head has ``head_seconds`` to arrive."""
        result = await super().finish_response(*args, **kwargs)
        self._await_head()
        return result

    def head_arrived(self) -> None:
        """Stop the head deadline: a request is being handled."""
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _await_head(self) -> None:
        """(Re)start the head deadline."""
        self.head_arrived()
        self._head_timer = self._timer_loop.call_later(self.deadlines.head_seconds, self._head_too_slow)

    def _head_too_slow(self) -> None:
        """Close a connection whose request head did not arrive in time (a stalled or idle client)."""
        self._head_timer = None
        logger.debug("closing a connection: no complete request head within %g s", self.deadlines.head_seconds)
        self.force_close()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Answer a request aiohttp could not parse or handle, with the JSON error body instead of plain text.

        The text aiohttp would send echoes the offending bytes; this names the problem and logs no request content.

        Args:
            request: The request (a placeholder when its head could not be parsed).
            status: The status aiohttp chose.
            exc: What went wrong.
            message: aiohttp's own text, not used.

        Returns:
            The JSON error response; the connection closes after it.

        Raises:
            ConnectionError: If part of a response was already sent.
        """
        if request.writer.output_size > 0:
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        if isinstance(exc, LineTooLong) or (isinstance(exc, BadHttpMessage) and "headers" in str(exc.message)):
            response = error_response(
                400,
                "request_head_too_large",
                f"The request line or a header is over {MAX_HEAD_LINE_BYTES} bytes, or there are over {MAX_HEADERS} "
                "headers. Shorten the URL or the headers.",
            )
        elif status == 400:
            response = error_response(
                400, "bad_request", f"The request is not valid HTTP/1.1 ({type(exc).__name__ if exc else 'unknown'})."
            )
        else:
            response = error_response(status, _CODES.get(status, "internal_error"), "The local host failed a request.")
        if status >= 500:
            logger.error("answered %d to %s", status, request.remote, exc_info=exc)
        else:  # a client's malformed request: one line, without its bytes
            logger.warning("answered %d to %s: %s", status, request.remote, type(exc).__name__)
        response.force_close()
        return response
