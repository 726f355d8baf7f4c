"""The local host's own surfaces: the webhook API behind a key and a private loopback listener, escaped logs,
request deadlines, and its own 4xx answers as JSON with an honest ``Allow``.

Each test runs a real LocalHost on 127.0.0.1 and talks to it through raw sockets, so what aiohttp itself answers
(malformed or oversized heads, stalled requests) is covered too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import azure.durable_functions as df
import azure.functions as func
import pytest
from azure.durable_functions.models.utils import http_utils

from agent_host._local_host import LocalHost, RequestDeadlines
from agent_host._local_host.log_text import loggable

T = TypeVar("T")
KEY = "local-Function-Key-77"


def counter_app() -> df.DFApp:
    """A Counter entity and a function-level route that signals it (POST) or reads it (GET) through its client."""
    app = df.DFApp(http_auth_level=func.AuthLevel.FUNCTION)

    @app.entity_trigger(context_name="context", entity_name="Counter")
    def counter(context: df.DurableEntityContext) -> None:
        context.set_state(context.get_state(lambda: 0) + context.get_input())

    @app.route(route="counter/{key}", methods=["GET", "POST"])
    @app.durable_client_input(client_name="client")
    async def signal_or_read(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        entity = df.EntityId("Counter", req.route_params["key"])
        if req.method == "POST":
            await client.signal_entity(entity, "add", len(req.get_body()) or 1)
            return func.HttpResponse(status_code=202)
        state = await client.read_entity_state(entity)
        return func.HttpResponse(json.dumps(state.entity_state), mimetype="application/json")

    return app


@dataclass
class Served:
    """A started LocalHost on its own event loop thread."""

    host: LocalHost
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread

    def call(self, make: Callable[[], Awaitable[T]]) -> T:
        async def wrapped() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(wrapped(), self.loop).result(30)

    @property
    def public(self) -> tuple[str, int]:
        url = urlsplit(self.host.base_url)
        return str(url.hostname), int(url.port or 0)

    @property
    def private(self) -> tuple[str, int]:
        url = urlsplit(self.host.rpc_base_url)
        return str(url.hostname), int(url.port or 0)


@pytest.fixture
def serve(tmp_path: pathlib.Path) -> Iterator[Callable[..., Served]]:
    """Start LocalHosts for the counter app on 127.0.0.1 (keyword arguments go to LocalHost); stop them after."""
    started: list[Served] = []

    def start(**options: Any) -> Served:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        state_dir = tmp_path / f"state{len(started)}"
        host = LocalHost(counter_app(), state_dir=state_dir, host="127.0.0.1", port=0, **options)
        served = Served(host, loop, thread)
        served.call(host.start)
        started.append(served)
        return served

    yield start
    for served in started:
        served.call(served.host.stop)
        served.call(http_utils._close_session)
        served.loop.call_soon_threadsafe(served.loop.stop)
        served.thread.join(10)
        served.loop.close()


@dataclass
class RawReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def exchange(address: tuple[str, int], raw: bytes, timeout: float = 10) -> RawReply:
    """Send raw bytes, read until the server closes the connection, and parse the one response."""
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return RawReply(int(status_line.split()[1]), headers, body)


def request(
    address: tuple[str, int], method: str, path: str, *, headers: dict[str, str] | None = None, body: bytes = b""
) -> RawReply:
    """One HTTP/1.1 request on its own connection."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {address[0]}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return exchange(address, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


def assert_json_error(reply: RawReply, status: int, code: str) -> dict[str, str]:
    assert reply.status == status, reply
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    error = reply.json()["error"]
    assert error["code"] == code and error["message"], error
    return error


# -- the durable webhook API: a private loopback listener for the app, a key on the public port ----------------------


def test_the_apps_client_uses_a_private_loopback_listener_and_the_public_webhook_needs_the_key(serve) -> None:
    served = serve(function_key=KEY)
    webhook = "/runtime/webhooks/durabletask/entities/counter/k"

    through_app = request(served.public, "POST", f"/api/counter/k?code={KEY}")
    served.call(lambda: served.host.scheduler.wait_idle(5))
    read_by_app = request(served.public, "GET", "/api/counter/k", headers={"x-functions-key": KEY})
    unkeyed = {
        "read": request(served.public, "GET", webhook),
        "signal": request(served.public, "POST", f"{webhook}?op=add", body=b'"5"'),
        "wrong key": request(served.public, "GET", webhook, headers={"x-functions-key": "nope"}),
    }
    queued_after_unkeyed = served.host.store.entities_with_pending()
    keyed_read = request(served.public, "GET", webhook, headers={"x-functions-key": KEY})
    code_read = request(served.public, "GET", f"{webhook}?code={KEY}")
    private_read = request(served.private, "GET", webhook)

    assert served.private[0] == "127.0.0.1" and served.private[1] != served.public[1]
    assert served.host.rpc_base_url == f"http://127.0.0.1:{served.private[1]}/runtime/webhooks/durabletask/"
    assert through_app.status == 202 and read_by_app.json() == 1  # the app's client needs no key: it is private
    for reply in unkeyed.values():
        assert_json_error(reply, 401, "unauthorized")
    assert queued_after_unkeyed == []
    assert (keyed_read.status, keyed_read.json()) == (200, 1)
    assert (code_read.status, code_read.json()) == (200, 1)
    assert (private_read.status, private_read.json()) == (200, 1)


def test_a_read_reaches_an_entity_the_app_has_no_function_for_as_on_azure(serve) -> None:
    # The task hub keeps an earlier app's entities (agent-framework-azurefunctions' dafx-*): reading one is allowed.
    served = serve()
    served.host.store.write_state("dafx-joker", "s1", '{"schemaVersion": "1.1.0"}')

    kept = request(served.private, "GET", "/runtime/webhooks/durabletask/entities/dafx-joker/s1")
    absent = request(served.private, "GET", "/runtime/webhooks/durabletask/entities/dafx-joker/s2")

    assert (kept.status, kept.json()) == (200, {"schemaVersion": "1.1.0"})
    assert_json_error(absent, 404, "not_found")


def test_without_a_key_the_public_webhook_answers_loopback_clients_and_refuses_unknown_entities(serve) -> None:
    served = serve()

    signal = request(served.public, "POST", "/runtime/webhooks/durabletask/entities/counter/k?op=add", body=b'"2"')
    served.call(lambda: served.host.scheduler.wait_idle(5))
    read = request(served.public, "GET", "/runtime/webhooks/durabletask/entities/counter/k")
    ghost = request(served.private, "POST", "/runtime/webhooks/durabletask/entities/ghost/g?op=boo", body=b"1")
    elsewhere = request(served.private, "GET", "/api/counter/k")

    assert signal.status == 202 and (read.status, read.json()) == (200, 2)
    assert "'ghost'" in assert_json_error(ghost, 404, "entity_not_found")["message"]
    assert served.host.store.entities_with_pending() == []
    assert_json_error(elsewhere, 404, "not_found")  # the private listener serves the webhook API only


# -- logs ------------------------------------------------------------------------------------------------------------


def test_a_newline_in_a_path_cannot_forge_a_log_line(serve, caplog: pytest.LogCaptureFixture) -> None:
    served = serve()
    forged = "c1%0A2030-01-01%2000:00:00,000%20INFO%20agent_host.turns:%20turn%20forged%20outcome=completed"

    with caplog.at_level(logging.DEBUG, logger="agent_host._local_host"):
        reply = request(served.public, "GET", f"/api/nothing/{forged}")
        request(served.private, "GET", f"/runtime/webhooks/durabletask/entities/counter/{forged}")

    messages = [record.getMessage() for record in caplog.records]
    assert reply.status == 404
    assert [m for m in messages if "forged" in m], "the requests were not logged"
    assert not [m for m in messages if "\n" in m or "\r" in m]
    assert any(f"GET /api/nothing/{forged} 404" in m for m in messages)


def test_loggable_escapes_control_and_non_ascii_characters_and_cuts_long_text() -> None:
    assert loggable("a\nb\r\x1b[31mc\u2028d é") == "a\\nb\\r\\x1b[31mc\\u2028d \\xe9"
    assert loggable("x" * 1000).endswith("... (700 more characters)") and len(loggable("x" * 1000)) < 340


# -- request deadlines -------------------------------------------------------------------------------------------------


def is_closed(sock: socket.socket) -> bool:
    """True when the server has closed the connection (a read returns end of file)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_stalled_request_heads_are_closed_after_the_head_deadline(serve) -> None:
    served = serve(request_deadlines=RequestDeadlines(head_seconds=0.5, body_seconds=5))
    stalled = []
    for number in range(100):
        sock = socket.create_connection(served.public)
        if number % 2:  # half send part of a head, half send nothing at all
            sock.sendall(b"GET /api/counter/k HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        stalled.append(sock)

    time.sleep(0.2)
    open_before = sum(not is_closed(sock) for sock in stalled)
    meanwhile = request(served.public, "GET", "/api/nothing")  # the host still answers others
    deadline = time.monotonic() + 5
    while any(not is_closed(sock) for sock in stalled) and time.monotonic() < deadline:
        time.sleep(0.05)
    open_after = sum(not is_closed(sock) for sock in stalled)
    for sock in stalled:
        sock.close()

    assert open_before == 100
    assert meanwhile.status == 404
    assert open_after == 0


@pytest.mark.parametrize("listener", ["public", "private"])
def test_a_stalled_request_body_is_answered_408_and_its_connection_closed(serve, listener: str) -> None:
    served = serve(request_deadlines=RequestDeadlines(head_seconds=5, body_seconds=0.5))
    path = "/api/counter/k" if listener == "public" else "/runtime/webhooks/durabletask/entities/counter/k?op=add"
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n".encode()

    started = time.monotonic()
    reply = exchange(getattr(served, listener), head + b"0123456789")  # 10 of 1,000 bytes, then silence
    elapsed = time.monotonic() - started

    assert "0.5 s" in assert_json_error(reply, 408, "request_timeout")["message"]
    assert 0.4 < elapsed < 3  # answered at the deadline, and the connection closed (exchange read to its end)
    assert served.host.store.entities_with_pending() == []


# -- the local host's own 4xx answers ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "PUT", "DELETE"])
def test_a_method_no_function_or_api_takes_gets_405_with_an_allow_listing_only_methods_that_work(
    serve, method: str
) -> None:
    served = serve()
    targets = {
        "webhook": (served.private, "/runtime/webhooks/durabletask/entities/counter/k"),
        "route": (served.public, "/api/counter/k"),
    }

    for address, path in targets.values():
        reply = request(address, method, path)
        assert reply.status == 405 and reply.headers["allow"] == "GET, POST"
        if method == "HEAD":
            assert reply.body == b""  # a HEAD answer has no body
        else:
            assert_json_error(reply, 405, "method_not_allowed")
        for allowed in reply.headers["allow"].split(", "):
            query = "?op=add" if allowed == "POST" and "webhooks" in path else ""
            assert request(address, allowed, path + query, body=b"1").status != 405, (path, allowed)


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /api/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n",
        b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"\r\n",
    ],
    ids=["long-url", "long-header", "many-headers"],
)
def test_an_oversized_request_head_gets_the_json_error_without_its_bytes_echoed(serve, raw: bytes) -> None:
    served = serve()

    reply = exchange(served.public, raw)

    assert "Shorten the URL or the headers" in assert_json_error(reply, 400, "request_head_too_large")["message"]
    assert b"aaaa" not in reply.body and b"bbbb" not in reply.body


def test_a_request_that_is_not_http_gets_the_json_error(serve) -> None:
    served = serve()

    reply = exchange(served.public, b"\x16\x03\x01 hello there\r\n\r\n")

    assert_json_error(reply, 400, "bad_request")
