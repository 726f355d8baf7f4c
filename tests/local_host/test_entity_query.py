"""The local host's entity query, `GET entities/{name}` on the webhook API: pages in key order, continuation tokens,
state on request, and refusals, in the shape the extension answers (less `lastOperationTime`, which it does not keep).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost

ENTITY = "conversation_assistant"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[RunningHost]:
    running = RunningHost(lambda: build_app(make_agent(ScriptedChatClient())), tmp_path)
    yield running
    running.stop()


def query(host: RunningHost, path: str, token: str | None = None) -> tuple[int, Any, str | None]:
    """GET a webhook path on the private listener (where the app's durable client goes)."""
    assert host.host is not None
    base = urlsplit(host.host.rpc_base_url)
    connection = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
    connection.request("GET", base.path + path, headers={"x-ms-continuation-token": token} if token else {})
    response = connection.getresponse()
    body = json.loads(response.read())
    next_token = response.getheader("x-ms-continuation-token")
    connection.close()
    return response.status, body, next_token


def store(host: RunningHost, *keys: str) -> None:
    assert host.host is not None
    for key in keys:
        host.host.store.write_state(ENTITY, key, json.dumps({"key": key}))


def test_pages_list_every_entity_once_in_key_order(host: RunningHost) -> None:
    store(host, "c3", "c1", "c5", "c2", "c4")

    status, first, token = query(host, f"entities/{ENTITY}?top=2")
    _, second, token2 = query(host, f"entities/{ENTITY}?top=2", token)
    _, third, token3 = query(host, f"entities/{ENTITY}?top=2", token2)

    assert status == 200
    assert [item["entityId"]["key"] for item in first + second + third] == ["c1", "c2", "c3", "c4", "c5"]
    assert first[0] == {"entityId": {"name": ENTITY, "key": "c1"}}
    assert token is not None and token2 is not None and token3 is None


def test_fetch_state_adds_each_entitys_state(host: RunningHost) -> None:
    store(host, "a", "b")

    _, page, token = query(host, f"entities/{ENTITY}?fetchState=true")

    assert page == [
        {"entityId": {"name": ENTITY, "key": "a"}, "state": {"key": "a"}},
        {"entityId": {"name": ENTITY, "key": "b"}, "state": {"key": "b"}},
    ]
    assert token is None


def test_the_entity_name_is_matched_as_the_host_lower_cases_it(host: RunningHost) -> None:
    store(host, "a")

    _, page, _ = query(host, "entities/Conversation_Assistant")

    assert page == [{"entityId": {"name": ENTITY, "key": "a"}}]


@pytest.mark.parametrize(
    ("path", "token", "status", "code"),
    [
        ("entities/conversation_nobody", None, 404, "entity_not_found"),
        (f"entities/{ENTITY}?top=0", None, 400, "bad_request"),
        (f"entities/{ENTITY}?top=many", None, 400, "bad_request"),
        (f"entities/{ENTITY}", "%%%", 400, "bad_request"),
    ],
    ids=["unknown-entity-function", "top-zero", "top-not-a-number", "token-not-from-this-host"],
)
def test_a_query_it_cannot_answer_is_refused(
    host: RunningHost, path: str, token: str | None, status: int, code: str
) -> None:
    answered, body, _ = query(host, path, token)

    assert (answered, body["error"]["code"]) == (status, code)
