"""Every route answers the same in both shapes of HTTP function: classic, and the FastAPI one of HTTP streams.

Two apps, alike but for `http_streams`, get the same requests on the local host; status, content type, the headers
a route sets and the body (timestamps and generated ids aside) must be the same. The local host serves the
FastAPI shape as the worker's web server does: a Starlette request in, the response run as an ASGI app.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import azure.functions as func
import pytest
from apps import build_app, make_agent
from azurefunctions.extensions.http.fastapi import FileResponse, Request, Response
from chat_clients import ScriptedChatClient
from hosting import Reply, RunningHost

from agent_host._local_host import LocalHost

CONVERSATION = "/api/agents/assistant/conversations/c1"
# (method, path, JSON body or raw bytes, headers)
REQUESTS: list[tuple[str, str, Any, dict[str, str]]] = [
    ("GET", "/api/health", None, {}),
    ("POST", f"{CONVERSATION}/turns", {"message": "My name is Ada."}, {}),
    ("POST", f"{CONVERSATION}/turns", b"Plain text works too.", {"Content-Type": "text/plain"}),
    ("GET", f"{CONVERSATION}/messages", None, {}),
    ("GET", CONVERSATION, None, {}),
    ("PUT", f"{CONVERSATION}/retention", {"mode": "keep_all", "maxStateBytes": 600000}, {}),
    ("POST", "/api/agents/assistant/run", {"message": "hi", "session_id": "c2"}, {}),
    ("POST", "/api/agents/assistant/run", b"hi", {"Content-Type": "text/plain", "x-ms-session-id": "c2"}),
    (
        "POST",
        "/api/agents/assistant/agui",
        {"threadId": "c3", "runId": "r1", "messages": [{"role": "user", "content": "hi"}]},
        {},
    ),
    ("POST", "/api/agents/assistant/agui", {"threadId": "c3", "messages": []}, {}),
    ("POST", f"{CONVERSATION}/turns", b"<xml/>", {"Content-Type": "application/xml"}),
    ("POST", f"{CONVERSATION}/turns", b"{not json", {"Content-Type": "application/json"}),
    ("PATCH", f"{CONVERSATION}/turns", None, {}),
    ("OPTIONS", f"{CONVERSATION}/turns", None, {}),
    ("GET", "/api/agents/nobody/conversations/c1", None, {}),
    ("GET", f"{CONVERSATION}/turns/0000000000000000000", None, {}),
    # Not waited for: the delete after it is queued behind it, so nothing depends on when it runs.
    ("POST", f"{CONVERSATION}/turns?wait=false", b"later", {"Content-Type": "text/plain"}),
    ("DELETE", CONVERSATION, None, {}),
    ("GET", CONVERSATION, None, {}),
]
# Turn ids vary in their issue time: a plain one whole, a keyed one (an AG-UI run's) up to its key's marker.
_VARYING = re.compile(
    rb'"(?:createdAt|updatedAt|completedAt|turnId|stateBytes)": ?(?:"[^"]*"|\d+)|[0-9a-f]{19}|[0-9a-f]{11}(?=k)'
)
_ROUTE_HEADERS = ("location", "allow", "content-type")


def answers_in(mode: str, state_dir: Path) -> list[tuple[int, dict[str, str], bytes]]:
    """Every request's answer from an app in one shape (one host at a time: the durable client's HTTP session
    belongs to one event loop per process)."""
    host = RunningHost(lambda: build_app(make_agent(ScriptedChatClient()), http_streams=mode == "streams"), state_dir)
    try:
        assert host.host is not None
        return [comparable(send(host, *request), host.host.base_url) for request in REQUESTS]
    finally:
        host.stop()


def send(host: RunningHost, method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
    if isinstance(body, bytes):
        return host.request(method, path, raw=body, headers=headers)
    return host.request(method, path, body, headers=headers)


def comparable(reply: Reply, base_url: str) -> tuple[int, dict[str, str], bytes]:
    # A response without a body has no content type to agree on (the classic local host labels even a 204).
    names = _ROUTE_HEADERS if reply.body else tuple(name for name in _ROUTE_HEADERS if name != "content-type")
    headers = {name: reply.headers[name].replace(base_url, "") for name in names if name in reply.headers}
    headers = {name: _VARYING.sub(b"<varies>", value.encode()).decode() for name, value in headers.items()}
    return reply.status, headers, _VARYING.sub(b"<varies>", reply.body)


def test_every_route_answers_alike_in_both_shapes(tmp_path: Path) -> None:
    answers = {mode: answers_in(mode, tmp_path / mode) for mode in ("classic", "streams")}

    for request, classic, streams in zip(REQUESTS, answers["classic"], answers["streams"], strict=True):
        assert streams == classic, request[:2]
    statuses = [status for status, _, _ in answers["streams"]]
    assert statuses == [200, 200, 200, 200, 200, 200, 200, 200, 200, 400, 415, 400, 405, 204, 404, 404, 202, 204, 404]
    assert b"Ada" in answers["streams"][1][2]
    assert b'"type": "TEXT_MESSAGE_CONTENT"' in answers["streams"][8][2]


def test_an_app_mixing_the_shapes_is_refused_as_the_worker_would(tmp_path: Path) -> None:
    app = build_app(make_agent(ScriptedChatClient()), http_streams=True)

    @app.function_name("own_classic")
    @app.route(route="own")
    def own(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("hi")

    with pytest.raises(ValueError, match=r"takes the FastAPI request .* but 'own_classic' takes azure.functions"):
        LocalHost(app, state_dir=tmp_path)


def test_an_apps_own_file_response_is_sent_whole(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<p>A page of the app's own.</p>", encoding="utf-8")
    app = build_app(make_agent(ScriptedChatClient()), http_streams=True)

    @app.route(route="page", methods=["GET"])
    async def own_page(req: Request) -> Response:
        return FileResponse(page, media_type="text/html")

    host = RunningHost(lambda: app, tmp_path / "state")
    try:
        reply = host.request("GET", "/api/page")
    finally:
        host.stop()

    assert reply.status == 200
    assert reply.headers["content-type"] == "text/html; charset=utf-8"
    assert reply.body == b"<p>A page of the app's own.</p>"
