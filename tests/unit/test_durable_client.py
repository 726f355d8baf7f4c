"""The durable client calls: the real `DurableOrchestrationClient` against a scripted webhook on 127.0.0.1.

A host or store that cannot answer is `storage_unavailable`, never a corrupt conversation (failure 16); stored state
that cannot be read is `state_corrupt`. Each test runs its own event loop and closes azure-functions-durable's
shared aiohttp session at its end, because that session is bound to the loop that created it.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import azure.durable_functions as df
import pytest
from aiohttp import web
from hosting import run_on_fresh_loop as run

from agent_host._contract import AgentRoute
from agent_host._conversation.state import (
    APPLIED_CHANGES_KEY,
    APPLIED_DELETES_KEY,
    DELETED_KEY,
    EXPIRED_TURNS_KEY,
    SCHEMA_VERSION_KEY,
    TURNS_KEY,
    StoredState,
    new_state,
)
from agent_host._conversation.turn_receipts import new_turn_id
from agent_host._conversation.view import ConversationView
from agent_host._conversation_client.durable_client import DurableConversationClient
from agent_host._errors import StateCorruptError, StateVersionError, StorageUnavailableError
from agent_host._retention_settings import RetentionSettings

T = TypeVar("T")
ENTITY = "conversation_assistant"
AGENT = AgentRoute("assistant", ENTITY, "host")
STATE_PATH = f"/runtime/webhooks/durabletask/entities/{ENTITY}/c1"
TURN_ID = new_turn_id(1_000)
OTHER_TURN_ID = new_turn_id(2_000)


@dataclass(frozen=True)
class Answer:
    """One scripted answer of the webhook."""

    status: int
    body: str = ""
    content_type: str = "application/json"


@dataclass(frozen=True)
class Seen:
    """One request the webhook received."""

    method: str
    path: str
    query: dict[str, str]
    body: str


def state_answer(state: StoredState) -> Answer:
    return Answer(200, json.dumps(state))


NOT_FOUND = Answer(404, json.dumps({"error": {"code": "not_found", "message": "Entity does not exist."}}))
UNAVAILABLE = Answer(503, json.dumps({"error": {"code": "unavailable", "message": "The store is down."}}))
FAILED_TEXT = Answer(500, "Internal Server Error", "text/plain")
ACCEPTED = Answer(202, "{}")
NOT_JSON = Answer(200, "{this is not json", "application/json")


def conversation(**extra: Any) -> StoredState:
    """A valid stored conversation with `extra` keys on top."""
    return {**new_state("assistant", "c1", RetentionSettings(), 1_000), **extra}


def with_turn(turn_id: str = TURN_ID) -> StoredState:
    return conversation(turnCount=1, **{TURNS_KEY: {turn_id: {"status": "completed", "at": 1_500, "messages": []}}})


def durable_client(port: int) -> df.DurableOrchestrationClient:
    """The durable client as the Functions worker builds it from the client binding's JSON."""
    binding = {
        "taskHubName": "TestHub",
        "creationUrls": {},
        "managementUrls": {},
        "rpcBaseUrl": f"http://127.0.0.1:{port}/runtime/webhooks/durabletask/",
    }
    return df.DurableOrchestrationClient(json.dumps(binding))


@asynccontextmanager
async def scripted_webhook(*answers: Answer) -> AsyncIterator[tuple[DurableConversationClient, list[Seen]]]:
    """A webhook answering each request with the next answer (the last one repeats), and what it received."""
    seen: list[Seen] = []
    script = list(answers)

    async def answer(request: web.Request) -> web.Response:
        seen.append(Seen(request.method, request.path, dict(request.query), await request.text()))
        scripted = script.pop(0) if len(script) > 1 else script[0]
        return web.Response(status=scripted.status, text=scripted.body, content_type=scripted.content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        yield DurableConversationClient(durable_client(port), AGENT), seen
    finally:
        await runner.cleanup()


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def read_with(*answers: Answer) -> tuple[ConversationView | None, list[Seen]]:
    async def scenario() -> tuple[ConversationView | None, list[Seen]]:
        async with scripted_webhook(*answers) as (client, seen):
            return await client.read("c1"), seen

    return run(scenario)


def read_error(*answers: Answer) -> Exception:
    with pytest.raises(Exception) as caught:
        read_with(*answers)
    return caught.value


def signal_with(*answers: Answer) -> list[Seen]:
    async def scenario() -> list[Seen]:
        async with scripted_webhook(*answers) as (client, seen):
            await client.signal("c1", "run", {"turnId": TURN_ID, "message": "Hi"})
            return seen

    return run(scenario)


# --- read ----------------------------------------------------------------------------------------------------------


def test_read_returns_the_decoded_state_from_a_get_of_the_entity() -> None:
    stored = with_turn()

    state, seen = read_with(state_answer(stored))

    assert state == ConversationView(stored)
    assert [(s.method, s.path) for s in seen] == [("GET", STATE_PATH)]


def test_read_of_an_entity_that_does_not_exist_is_none() -> None:
    state, seen = read_with(NOT_FOUND)

    assert state is None
    assert len(seen) == 1


def test_read_when_the_host_answers_503_is_storage_unavailable() -> None:
    error = read_error(UNAVAILABLE)

    assert isinstance(error, StorageUnavailableError)
    assert (error.code, error.status) == ("storage_unavailable", 503)
    assert "unexpected status code 503" in error.message
    assert error.message.endswith("Retry shortly; nothing was lost.")


def test_read_when_the_host_fails_with_a_text_body_is_storage_unavailable_not_corrupt_state() -> None:
    # A 500 whose body is not JSON comes from the host, not from the conversation's stored state (failure 16).
    error = read_error(FAILED_TEXT)

    assert isinstance(error, StorageUnavailableError), f"{type(error).__name__}: {error}"
    assert error.code == "storage_unavailable"


def test_read_when_nothing_listens_is_storage_unavailable() -> None:
    async def scenario() -> None:
        await DurableConversationClient(durable_client(closed_port()), AGENT).read("c1")

    with pytest.raises(StorageUnavailableError) as caught:
        run(scenario)

    assert caught.value.message == (
        "The durable store is unavailable (the durable host could not be reached: ClientConnectorError). "
        "Retry shortly; nothing was lost."
    )


def test_read_of_a_state_that_is_not_json_is_state_corrupt() -> None:
    error = read_error(NOT_JSON)

    assert isinstance(error, StateCorruptError)
    assert (error.code, error.status) == ("state_corrupt", 422)
    assert error.message.startswith("The stored conversation is not valid JSON (")


def test_read_of_a_state_of_another_schema_version_is_refused() -> None:
    error = read_error(state_answer(conversation(**{SCHEMA_VERSION_KEY: 99})))

    assert isinstance(error, StateVersionError)
    assert "has schema version 99" in error.message


def test_read_for_delete_treats_unreadable_state_as_existing_but_not_an_unreachable_store() -> None:
    async def scenario(answer: Answer) -> ConversationView | None:
        async with scripted_webhook(answer) as (client, _):
            return await client.read_for_delete("c1")

    assert run(lambda: scenario(NOT_JSON)) == ConversationView.empty()
    assert run(lambda: scenario(NOT_FOUND)) is None
    with pytest.raises(StorageUnavailableError):
        run(lambda: scenario(UNAVAILABLE))


# --- signal --------------------------------------------------------------------------------------------------------


def test_signal_posts_the_operation_with_its_input_encoded_as_the_host_expects() -> None:
    seen = signal_with(ACCEPTED)

    assert [(s.method, s.path, s.query) for s in seen] == [("POST", STATE_PATH, {"op": "run"})]
    # The client JSON-encodes the input, then aiohttp encodes that string again: the host's double encoding.
    assert json.loads(json.loads(seen[0].body)) == {"turnId": TURN_ID, "message": "Hi"}


@pytest.mark.parametrize("answer", [FAILED_TEXT, UNAVAILABLE], ids=["500 text", "503 json"])
def test_signal_the_host_refuses_is_storage_unavailable(answer: Answer) -> None:
    with pytest.raises(StorageUnavailableError) as caught:
        signal_with(answer)

    assert caught.value.code == "storage_unavailable"
    assert caught.value.message.startswith("The durable store is unavailable (the durable host refused the signal: ")


def test_signal_when_nothing_listens_is_storage_unavailable() -> None:
    async def scenario() -> None:
        await DurableConversationClient(durable_client(closed_port()), AGENT).signal("c1", "run", {"turnId": TURN_ID})

    with pytest.raises(StorageUnavailableError, match=r"could not be reached: ClientConnectorError"):
        run(scenario)


# --- wait_for_turn -------------------------------------------------------------------------------------------------


def wait_for_turn(*answers: Answer, timeout: float = 5) -> tuple[ConversationView | None, list[Seen]]:
    async def scenario() -> tuple[ConversationView | None, list[Seen]]:
        async with scripted_webhook(*answers) as (client, seen):
            return await client.wait_for_turn("c1", TURN_ID, timeout), seen

    return run(scenario)


def test_wait_for_turn_polls_until_the_turn_is_recorded() -> None:
    recorded = with_turn()

    state, seen = wait_for_turn(
        NOT_FOUND, state_answer(conversation()), state_answer(with_turn(OTHER_TURN_ID)), state_answer(recorded)
    )

    assert state == ConversationView(recorded)
    assert state is not None and state.turn(TURN_ID) is not None and state.turn(TURN_ID).status == "completed"
    assert len(seen) == 4 and {s.method for s in seen} == {"GET"}


def test_wait_for_turn_settles_on_an_expired_turn() -> None:
    expired = conversation(**{EXPIRED_TURNS_KEY: [TURN_ID]})

    state, _ = wait_for_turn(state_answer(conversation()), state_answer(expired))

    assert state == ConversationView(expired)


def test_wait_for_turn_settles_when_the_conversation_was_deleted_with_the_turn() -> None:
    deleted_other = conversation(**{DELETED_KEY: {"at": 3_000, "existed": True, "turns": [OTHER_TURN_ID]}})
    deleted_this = conversation(**{DELETED_KEY: {"at": 3_000, "existed": True, "turns": [TURN_ID]}})

    state, seen = wait_for_turn(state_answer(deleted_other), state_answer(deleted_this))

    assert state == ConversationView(deleted_this)
    assert len(seen) == 2


def test_wait_for_turn_gives_up_after_its_timeout() -> None:
    started = time.monotonic()

    state, seen = wait_for_turn(state_answer(conversation()), timeout=0.3)

    elapsed = time.monotonic() - started
    assert state is None
    assert 0.3 <= elapsed < 2
    assert 3 <= len(seen) < 40  # a short first interval that grows, never a busy loop


@pytest.mark.parametrize(
    ("answer", "error"),
    [(UNAVAILABLE, StorageUnavailableError), (NOT_JSON, StateCorruptError)],
    ids=["store unavailable", "state corrupt"],
)
def test_wait_for_turn_tolerates_nothing_but_not_yet(answer: Answer, error: type[Exception]) -> None:
    with pytest.raises(error):
        wait_for_turn(state_answer(conversation()), answer, state_answer(with_turn()))


# --- wait_for_change -----------------------------------------------------------------------------------------------


def wait_for_change(*answers: Answer, timeout: float = 5) -> tuple[ConversationView | None, list[Seen]]:
    async def scenario() -> tuple[ConversationView | None, list[Seen]]:
        async with scripted_webhook(*answers) as (client, seen):
            return await client.wait_for_change("c1", "change-2", timeout), seen

    return run(scenario)


def test_wait_for_change_returns_the_state_that_acknowledges_the_change() -> None:
    applied = conversation(**{APPLIED_CHANGES_KEY: ["change-1", "change-2"]})

    state, seen = wait_for_change(
        NOT_FOUND, state_answer(conversation(**{APPLIED_CHANGES_KEY: ["change-1"]})), state_answer(applied)
    )

    assert state == ConversationView(applied)
    assert len(seen) == 3


def test_wait_for_change_treats_unreadable_state_as_not_yet() -> None:
    applied = conversation(**{APPLIED_CHANGES_KEY: ["change-2"]})
    newer = state_answer(conversation(**{SCHEMA_VERSION_KEY: 99}))

    state, seen = wait_for_change(NOT_JSON, newer, state_answer(applied))

    assert state == ConversationView(applied)
    assert len(seen) == 3


def test_wait_for_change_on_state_that_stays_unreadable_gives_up() -> None:
    state, seen = wait_for_change(NOT_JSON, timeout=0.2)

    assert state is None
    assert len(seen) >= 2


def test_wait_for_change_does_not_swallow_an_unreachable_store() -> None:
    with pytest.raises(StorageUnavailableError):
        wait_for_change(state_answer(conversation()), UNAVAILABLE)


def test_wait_for_delete_takes_a_conversation_started_after_the_delete_for_its_acknowledgement() -> None:
    # Failure 19: the delete ran and a turn started a new conversation before the poll saw the tombstone.
    later = conversation(**{APPLIED_DELETES_KEY: ["change-2"]})

    async def scenario() -> tuple[ConversationView | None, list[Seen]]:
        answers = (state_answer(conversation(**{APPLIED_CHANGES_KEY: ["change-1"]})), state_answer(later))
        async with scripted_webhook(*answers) as (client, seen):
            return await client.wait_for_delete("c1", "change-2", 5), seen

    state, seen = run(scenario)

    assert state == ConversationView(later)
    assert len(seen) == 2
