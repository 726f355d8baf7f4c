"""The local host without a function key cannot be driven by another origin's page, nor read under a rebound name.

The attack: a page open in the developer's browser sends "simple" cross-origin POSTs (text/plain, no preflight) to
127.0.0.1, and a DNS-rebinding page reads answers under its own name. Each test checks the stored state afterwards
through a client that is not a browser (no Origin), so a refusal that still ran the request would fail it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from apps import build_app, make_agent
from hosting import Reply, RunningHost

from agent_host import OfflineChatClient
from agent_host._local_host.browser_guard import BrowserGuard, allowed_hosts_from_settings

EVIL = "http://evil.example"
TURNS = "/api/agents/assistant/conversations/{id}/turns"
MESSAGES = "/api/agents/assistant/conversations/{id}/messages"
SIGNAL = "/runtime/webhooks/durabletask/entities/conversation_assistant/{id}?op={op}"
TEXT = {"Content-Type": "text/plain"}
DELETE_INPUT = json.dumps(json.dumps({"changeId": "mallory"})).encode()  # as signal_entity and aiohttp encode it


def app():
    return build_app(make_agent(OfflineChatClient()), enable_mcp_tool_trigger=True)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[RunningHost]:
    host = RunningHost(app, tmp_path)
    yield host
    host.stop()


def list_mcp_tools(running: RunningHost, headers: dict[str, str]) -> Reply:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    return running.request(
        "POST", "/runtime/webhooks/mcp", raw=body, headers={**headers, "Accept": "application/json, text/event-stream"}
    )


def own_origin(running: RunningHost) -> str:
    assert running.host is not None
    return running.host.base_url


def refused_cross_origin(reply: Reply) -> None:
    assert reply.status == 403, reply.body
    assert reply.json()["error"]["code"] == "cross_origin_request"


def test_a_cross_origin_page_cannot_run_a_turn_call_run_or_delete_through_the_webhook_api(
    running: RunningHost,
) -> None:
    running.request("POST", TURNS.format(id="kept"), {"message": "My name is Ada."})
    page = {"Origin": EVIL, **TEXT}

    turn = running.request("POST", TURNS.format(id="c1"), raw=b"My name is Mallory.", headers=page)
    run = running.request("POST", "/api/agents/assistant/run?session_id=c2", raw=b"My name is Mallory.", headers=page)
    delete = running.request("POST", SIGNAL.format(id="kept", op="delete"), raw=DELETE_INPUT, headers=page)
    http_delete = running.request("DELETE", "/api/agents/assistant/conversations/kept", headers={"Origin": EVIL})
    mcp = list_mcp_tools(running, page)
    running.wait_idle()

    for reply in (turn, run, delete, http_delete, mcp):
        refused_cross_origin(reply)
    assert running.request("GET", MESSAGES.format(id="c1")).status == 404
    assert running.request("GET", MESSAGES.format(id="c2")).status == 404
    kept = running.request("GET", MESSAGES.format(id="kept"))
    assert kept.json()["messages"][0]["text"] == "My name is Ada."


def test_the_refusal_names_both_origins_and_what_to_use_instead(running: RunningHost) -> None:
    reply = running.request("POST", TURNS.format(id="c1"), raw=b"hi", headers={"Origin": EVIL, **TEXT})
    host = own_origin(running).removeprefix("http://")

    assert reply.json()["error"]["message"] == (
        f"Requests sent by a page from another origin are refused (Origin 'http://evil.example', this host is "
        f"'{host}'): a web page must not drive this host. Use a client that is not a browser (curl, an SDK), or the "
        "inspector this host serves at /api/inspector."
    )


def test_a_page_of_the_hosts_own_origin_and_clients_without_origin_are_served(running: RunningHost) -> None:
    first = running.request(
        "POST", TURNS.format(id="c1"), raw=b"My name is Ada.", headers={"Origin": own_origin(running), **TEXT}
    )
    second = running.request("POST", TURNS.format(id="c1"), {"message": "What is my name?"})

    assert first.status == 200
    assert second.json()["text"] == "[offline model] Your name is Ada."


@pytest.mark.parametrize(
    "origin",
    [
        "null",
        "http://127.0.0.1",
        "http://127.0.0.1:1",
        "http://localhost:{port}",
        "file://",
        "http://evil.example:{port}",
    ],
)
def test_origins_other_than_the_requests_own_are_refused(running: RunningHost, origin: str) -> None:
    assert running.host is not None
    port = running.host.base_url.rsplit(":", 1)[1]
    reply = running.request(
        "POST", TURNS.format(id="c1"), raw=b"hi", headers={"Origin": origin.format(port=port), **TEXT}
    )
    refused_cross_origin(reply)
    assert running.request("GET", MESSAGES.format(id="c1")).status == 404


def test_a_rebound_host_name_gets_no_transcript(running: RunningHost) -> None:
    running.request("POST", TURNS.format(id="c1"), {"message": "My secret is 42."})
    assert running.host is not None
    port = running.host.base_url.rsplit(":", 1)[1]

    rebound = running.request("GET", MESSAGES.format(id="c1"), headers={"Host": f"evil.example:{port}"})
    webhook = running.request(
        "GET", "/runtime/webhooks/durabletask/entities/conversation_assistant/c1", headers={"Host": "evil.example"}
    )

    for reply in (rebound, webhook):
        assert reply.status == 421
        assert b"42" not in reply.body
        assert reply.json()["error"] == {
            "code": "host_not_allowed",
            "message": "This host does not answer requests for 'evil.example': it answers loopback names (localhost, "
            "127.0.0.1, [::1]) and the address it is bound to. To reach it under another name (a proxy, a tunnel), "
            "list the name in AGENT_HOST_ALLOWED_HOSTS.",
        }


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST.:{port}", "[::1]:{port}", "127.9.9.9"]
)
def test_loopback_host_names_are_answered(running: RunningHost, host: str) -> None:
    running.request("POST", TURNS.format(id="c1"), {"message": "My name is Ada."})
    assert running.host is not None
    port = running.host.base_url.rsplit(":", 1)[1]

    reply = running.request("GET", MESSAGES.format(id="c1"), headers={"Host": host.format(port=port)})

    assert reply.status == 200
    assert reply.json()["messages"][0]["text"] == "My name is Ada."


@pytest.mark.parametrize("host", ["", "evil.example/x", "a@127.0.0.1", "127.0.0.1:notaport"])
def test_a_missing_or_malformed_host_header_is_refused(running: RunningHost, host: str) -> None:
    reply = running.request("GET", "/api/health", headers={"Host": host})
    assert reply.status == 400
    assert reply.json()["error"]["code"] == "invalid_host"


def test_the_private_listener_refuses_pages_and_rebound_names_too(running: RunningHost) -> None:
    import http.client
    from urllib.parse import urlsplit

    assert running.host is not None
    private = urlsplit(running.host.rpc_base_url)
    path = f"{private.path}entities/conversation_assistant/c1"

    def send(method: str, headers: dict[str, str], body: bytes | None = None) -> int:
        connection = http.client.HTTPConnection(private.hostname, private.port, timeout=30)
        connection.request(method, path + ("?op=delete" if method == "POST" else ""), body=body, headers=headers)
        status = connection.getresponse().status
        connection.close()
        return status

    running.request("POST", TURNS.format(id="c1"), {"message": "My name is Ada."})
    assert send("POST", {"Origin": EVIL, **TEXT}, DELETE_INPUT) == 403
    assert send("GET", {"Host": "evil.example"}) == 421
    assert send("GET", {}) == 200  # the app's own durable client: loopback Host, no Origin
    running.wait_idle()
    assert running.request("GET", MESSAGES.format(id="c1")).status == 200


def test_the_webhook_api_and_mcp_take_json_bodies_only(running: RunningHost) -> None:
    running.request("POST", TURNS.format(id="c1"), {"message": "My name is Ada."})
    as_text = running.request("POST", SIGNAL.format(id="c1", op="delete"), raw=DELETE_INPUT, headers=TEXT)
    as_form = running.request(
        "POST",
        "/runtime/webhooks/durabletask/orchestrators/nothing",
        raw=b"a=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    mcp = list_mcp_tools(running, TEXT)
    running.wait_idle()

    assert (as_text.status, as_text.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert as_text.json()["error"]["message"] == (
        "An entity signal takes a JSON body (Content-Type: application/json), not 'text/plain'; nothing was done."
    )
    assert (as_form.status, as_form.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert mcp.status == 415
    assert mcp.json()["error"]["message"] == "Unsupported Media Type: Content-Type must be application/json"
    assert running.request("GET", MESSAGES.format(id="c1")).status == 200  # the text/plain delete did nothing

    deleted = running.request(
        "POST",
        SIGNAL.format(id="c1", op="delete"),
        raw=DELETE_INPUT,
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    running.wait_idle()
    assert deleted.status == 202
    assert running.request("GET", MESSAGES.format(id="c1")).status == 404


@pytest.mark.parametrize(
    ("bound", "allowed", "name", "served"),
    [
        ("127.0.0.1", (), "localhost", True),
        ("127.0.0.1", (), "::1", True),
        ("127.0.0.1", (), "10.0.0.5", False),
        ("127.0.0.1", (), "evil.localhost", False),
        ("127.0.0.1", ("dev.example",), "dev.example", True),
        ("127.0.0.1", (".example",), "box.example", True),
        ("127.0.0.1", (".example",), "example.evil", False),
        ("127.0.0.1", ("*",), "anything.example", True),
        ("0.0.0.0", (), "10.0.0.5", True),
        ("0.0.0.0", (), "evil.example", False),
        ("::", (), "fe80::1", True),
        ("10.0.0.5", (), "10.0.0.5", True),
        ("10.0.0.5", (), "10.0.0.6", False),
        ("devbox", (), "devbox", True),
        ("devbox", (), "evil.example", False),
    ],
)
def test_which_host_names_a_binding_answers(bound: str, allowed: tuple[str, ...], name: str, served: bool) -> None:
    assert BrowserGuard(bound, allowed).serves(name) is served


def test_allowed_hosts_come_from_the_setting() -> None:
    assert allowed_hosts_from_settings({"AGENT_HOST_ALLOWED_HOSTS": " Dev.Example. , .tunnel.example ,"}) == (
        "dev.example",
        ".tunnel.example",
    )
    assert allowed_hosts_from_settings({}) == ()
