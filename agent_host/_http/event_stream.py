"""Server-Sent Events: a turn's stream as `text/event-stream`, and the response that carries one.

A route answers an `EventStreamResponse` when its body is a stream; the function edges send it chunk by chunk
(HTTP streams on) or whole, once it ends (classic functions). Knows the SSE wire format, not where events come from.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import azure.functions as func

from .._errors import AgentHostError, status_for_code
from .._streaming.channel import StreamEvent

EVENT_STREAM_MEDIA_TYPE = "text/event-stream"
ERROR_EVENT = "error"
# A comment line: keeps proxies from closing a quiet stream; clients ignore it.
KEEP_ALIVE = b": keep-alive\n\n"
STREAM_HEADERS = {
    "Content-Type": f"{EVENT_STREAM_MEDIA_TYPE}; charset=utf-8",
    "Cache-Control": "no-cache",
    # Reverse proxies that buffer responses (nginx) send each event as it comes with this.
    "X-Accel-Buffering": "no",
}


def content_type(mimetype: str, charset: str) -> str:
    """The Content-Type of a body of `mimetype`, with its charset when it is text (JSON and XML included).

    Both function shapes set it themselves: the worker's `http` converter would give a classic JSON response a bare
    `application/json`, while the FastAPI shape says its charset.
    """
    textual = mimetype.startswith("text/") or mimetype.endswith(("json", "xml"))
    return f"{mimetype}; charset={charset}" if textual else mimetype


def encode_event(event: StreamEvent) -> bytes:
    """One event as SSE: its `id:`, `event:` and one `data:` line of JSON (JSON text holds no raw newline)."""
    data = json.dumps(event.data, ensure_ascii=False)
    return f"id: {event.id}\nevent: {event.event}\ndata: {data}\n\n".encode("utf-8", "backslashreplace")


def encode_error(error: AgentHostError) -> bytes:
    """The event that ends a stream which cannot go on: the error body a JSON response would carry, and the status
    it would have had (`httpStatus`).

    It has no `id:`, so a client that reconnects resumes after the last turn event it received.
    """
    data = json.dumps({**error.body(), "httpStatus": status_for_code(error.code)}, ensure_ascii=False)
    return f"event: {ERROR_EVENT}\ndata: {data}\n\n".encode("utf-8", "backslashreplace")


@dataclass
class EventStreamResponse:
    """A response whose body is produced while it is sent: an event stream.

    Attributes:
        body: The stream's chunks, each one or more whole events.
        status: The HTTP status.
        headers: Headers beyond the event stream's own.
    """

    body: AsyncIterator[bytes]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def all_headers(self) -> dict[str, str]:
        """The stream's headers and the route's own."""
        return {**STREAM_HEADERS, **self.headers}

    async def collect(self) -> bytes:
        """The whole stream, once it ended (for functions that cannot stream a response)."""
        return b"".join([chunk async for chunk in self.body])


RouteResponse = func.HttpResponse | EventStreamResponse
"""What a route handler answers: a whole response, or an event stream."""
