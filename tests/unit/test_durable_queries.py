"""The paged durable queries the SDK lacks, against a stand-in host on loopback: headers, tokens and failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent_host._errors import InvalidRequestError, StorageUnavailableError
from agent_host._http.durable_queries import list_entities, list_instances


class StandInHost:
    """Answers every request with the next scripted (status, body, headers) and records what it was asked."""

    def __init__(self, *answers: tuple[int, Any, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict[str, str], str | None]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.query), request.headers.get("x-ms-continuation-token")))
        status, body, headers = self.answers.pop(0)
        return web.Response(status=status, text=json.dumps(body), content_type="application/json", headers=headers)


T = TypeVar("T")


def ask(host: StandInHost, query: Callable[[Any], Awaitable[T]]) -> T:
    """Run `query(client)` with a client whose RPC base URL is `host`, served on loopback for the duration."""

    async def main() -> T:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", host.handle)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        base = f"http://127.0.0.1:{server.port}/runtime/webhooks/durabletask/"
        try:
            return await query(SimpleNamespace(_orchestration_bindings=SimpleNamespace(rpc_base_url=base)))
        finally:
            await server.close()

    return asyncio.run(main())


def entity(key: str) -> dict[str, Any]:
    return {"entityId": {"name": "conversation_assistant", "key": key}, "lastOperationTime": "2026-01-02T03:04:05Z"}


def test_an_entity_page_sends_the_query_and_the_token_and_returns_the_next_token() -> None:
    host = StandInHost((200, [entity("a"), entity("b")], {"x-ms-continuation-token": 'opaque{"x":1}'}))

    page = ask(host, lambda c: list_entities(c, "Conversation_Assistant", top=2, continuation_token="previous"))

    assert [item["entityId"]["key"] for item in page.items] == ["a", "b"]
    assert page.continuation_token == 'opaque{"x":1}'
    assert host.requests == [
        (
            "/runtime/webhooks/durabletask/entities/conversation_assistant",
            {"top": "2", "fetchState": "false"},
            "previous",
        )
    ]


@pytest.mark.parametrize("header", [{}, {"x-ms-continuation-token": ""}, {"x-ms-continuation-token": "null"}])
def test_the_last_page_has_no_token_however_the_host_writes_it(header: dict[str, str]) -> None:
    host = StandInHost((200, [entity("a")], header))

    page = ask(host, lambda c: list_entities(c, "conversation_assistant", top=10, continuation_token=None))

    assert page.continuation_token is None


def test_an_instance_page_asks_without_inputs() -> None:
    host = StandInHost((200, [{"name": "wf", "instanceId": "r1", "runtimeStatus": "Running"}], {}))

    page = ask(host, lambda c: list_instances(c, top=5, continuation_token=None))

    assert page.items == [{"name": "wf", "instanceId": "r1", "runtimeStatus": "Running"}]
    assert host.requests == [("/runtime/webhooks/durabletask/instances", {"top": "5", "showInput": "false"}, None)]


def test_a_refused_token_is_the_callers_invalid_query() -> None:
    host = StandInHost((400, {"error": "bad token"}, {}))

    with pytest.raises(InvalidRequestError, match="continuationToken") as raised:
        ask(host, lambda c: list_entities(c, "conversation_assistant", top=10, continuation_token="forged"))

    assert raised.value.code == "invalid_query"


@pytest.mark.parametrize(("status", "body"), [(500, {"Message": "boom"}), (200, {"not": "a list"})])
def test_a_host_that_cannot_answer_is_storage_unavailable(status: int, body: Any) -> None:
    host = StandInHost((status, body, {}))

    with pytest.raises(StorageUnavailableError, match=f"answered {status}" if status != 200 else "not a list"):
        ask(host, lambda c: list_instances(c, top=10, continuation_token=None))


def test_an_unreachable_host_is_storage_unavailable() -> None:
    client = SimpleNamespace(_orchestration_bindings=SimpleNamespace(rpc_base_url="http://127.0.0.1:9/"))

    with pytest.raises(StorageUnavailableError, match="could not answer"):
        asyncio.run(list_entities(client, "conversation_assistant", top=10, continuation_token=None))
