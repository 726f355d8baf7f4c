"""What a function's invocation gives the caller, as under the real Python worker, in either invocation mode: a classic
HTTP function's return value through the worker's `http` converter, an HTTP-streams function's through FastAPI, the
`context` the worker builds, optional route parameters as the Functions host matches them."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import azure.functions as func
import pytest
from azurefunctions.extensions.http.fastapi import JSONResponse, Request
from hosting import RunningHost

from agent_host._local_host import LocalHost

HERE = str(Path(__file__).resolve().parent)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def classic_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="nothing")
    def nothing(req: func.HttpRequest) -> func.HttpResponse:
        return None  # type: ignore[return-value]

    @app.route(route="raw")
    def raw(req: func.HttpRequest) -> func.HttpResponse:
        return b"bytes"  # type: ignore[return-value]

    @app.route(route="text")
    def text(req: func.HttpRequest) -> str:
        return "plain"

    @app.route(route="context")
    def context(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
        seen = {
            "functionName": context.function_name,
            "functionDirectory": context.function_directory,
            "traceParent": context.trace_context.trace_parent,
            "traceState": context.trace_context.trace_state,
            "retry": [context.retry_context.retry_count, context.retry_context.max_retry_count],
        }
        return func.HttpResponse(json.dumps(seen), mimetype="application/json")

    @app.route(route="cookies")
    def cookies(req: func.HttpRequest) -> func.HttpResponse:
        response = func.HttpResponse("set", headers={"Set-Cookie": "a=1; Path=/; HttpOnly"})
        response.headers.add("Set-Cookie", "b=2; Max-Age=60; Secure; SameSite=Lax")
        return response

    return app


def streams_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="text")
    async def text(req: Request) -> str:
        return "plain"

    @app.route(route="classic-response")
    async def classic_response(req: Request) -> JSONResponse:
        return func.HttpResponse("hello", status_code=201)  # type: ignore[return-value]

    return app


def optional_parameter_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="files/{folder}/{name?}")
    def files(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse(json.dumps(dict(req.route_params)), mimetype="application/json")

    return app


def optional_parameter_streams_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="files/{name?}")
    async def files(req: Request) -> JSONResponse:
        return JSONResponse(dict(req.path_params))

    return app


@pytest.fixture
def classic(tmp_path: Path, mode: str) -> Iterator[RunningHost]:
    host = RunningHost(classic_app, tmp_path, invocation=mode)
    yield host
    host.stop()


@pytest.fixture
def streams(tmp_path: Path, mode: str) -> Iterator[RunningHost]:
    host = RunningHost(streams_app, tmp_path, invocation=mode)
    yield host
    host.stop()


def test_a_classic_function_returning_none_fails_with_500(classic: RunningHost) -> None:
    reply = classic.request("GET", "/api/nothing")

    assert (reply.status, reply.json()["error"]["code"]) == (500, "internal_error")


def test_a_classic_function_returning_bytes_fails_with_500(classic: RunningHost) -> None:
    reply = classic.request("GET", "/api/raw")

    assert (reply.status, reply.json()["error"]["code"]) == (500, "internal_error")


def test_a_classic_function_returning_a_string_answers_it_as_text(classic: RunningHost) -> None:
    reply = classic.request("GET", "/api/text")

    assert (reply.status, reply.headers["content-type"], reply.body) == (200, "text/plain; charset=utf-8", b"plain")


def test_cookies_a_function_sets_reach_the_client_each_in_its_own_header(classic: RunningHost) -> None:
    assert classic.host is not None
    url = urlsplit(classic.host.base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    connection.request("GET", "/api/cookies")
    response = connection.getresponse()
    cookies = response.msg.get_all("Set-Cookie")
    connection.close()

    assert cookies == ["a=1; path=/; httponly", "b=2; max-age=60; secure; samesite=lax"]


def test_the_context_carries_the_function_directory_and_the_requests_trace(classic: RunningHost) -> None:
    traceparent = f"00-{TRACE_ID}-00f067aa0ba902b7-01"

    seen = classic.request("GET", "/api/context", headers={"traceparent": traceparent, "tracestate": "k=v"}).json()

    assert (seen["functionName"], seen["functionDirectory"]) == ("context", HERE)
    version, trace_id, span_id, flags = seen["traceParent"].split("-")
    assert (version, trace_id, flags, seen["traceState"]) == ("00", TRACE_ID, "01", "k=v")
    assert span_id != "00f067aa0ba902b7"  # the host's own span for the invocation, a child of the caller's
    assert seen["retry"] == [0, 0]


def test_without_a_traceparent_the_invocation_starts_a_trace(classic: RunningHost) -> None:
    first = classic.request("GET", "/api/context").json()["traceParent"]
    second = classic.request("GET", "/api/context").json()["traceParent"]

    assert first.startswith("00-") and len(first) == 55
    assert first.split("-")[1] != second.split("-")[1]


def test_an_optional_route_parameter_may_be_left_out(tmp_path: Path, mode: str) -> None:
    host = RunningHost(optional_parameter_app, tmp_path, invocation=mode)
    try:
        assert host.request("GET", "/api/files/docs/a.txt").json() == {"folder": "docs", "name": "a.txt"}
        assert host.request("GET", "/api/files/docs").json() == {"folder": "docs"}
        assert host.request("GET", "/api/files").status == 404
    finally:
        host.stop()


def test_an_http_streams_function_returning_a_string_is_answered_as_fastapi_answers_it(streams: RunningHost) -> None:
    reply = streams.request("GET", "/api/text")

    assert (reply.status, reply.headers["content-type"], reply.json()) == (200, "application/json", "plain")


def test_an_http_streams_function_returning_an_http_response_is_answered_with_its_fields(
    streams: RunningHost,
) -> None:
    reply = streams.request("GET", "/api/classic-response")

    assert (reply.status, reply.headers["content-type"]) == (200, "application/json")
    fields = reply.json()
    assert fields["_HttpResponse__status_code"] == 201
    assert fields["_HttpResponse__mimetype"] == "text/plain"


def test_an_optional_route_parameter_reaches_an_http_streams_function(tmp_path: Path, mode: str) -> None:
    host = RunningHost(optional_parameter_streams_app, tmp_path, invocation=mode)
    try:
        assert host.request("GET", "/api/files/a.txt").json() == {"name": "a.txt"}
        assert host.request("GET", "/api/files").json() == {}
    finally:
        host.stop()


def test_an_http_streams_app_without_init_indexing_is_refused(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHON_ENABLE_INIT_INDEXING", raising=False)

    with pytest.raises(ValueError, match="needs the app setting PYTHON_ENABLE_INIT_INDEXING=1") as raised:
        LocalHost(streams_app(), state_dir=tmp_path, port=0, invocation=mode)

    assert "every request waits forever" in str(raised.value)
