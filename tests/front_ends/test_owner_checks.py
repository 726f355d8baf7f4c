"""Per-user conversations (`conversation_owners`) through the HTTP triggers, MCP and the Responses API on the in-memory
app (`front_doors`): the admin key reaches every conversation, a request naming nobody is 401, a retention change
creates a conversation its principal owns, and another principal meets the 404 of a conversation that does not exist.
Every route at once, listing, and owners turned on over stored conversations are the local host's
(tests/mcp/test_conversation_owners.py)."""

from __future__ import annotations

import pytest
from apps import make_agent
from front_doors import MemoryFunctionApp, call_mcp_tool, memory_app
from principals import ADMIN, ADMIN_KEY, ALICE, BOB, C1, CONVERSATIONS, snapshot, started

from agent_host import ConversationNotFoundError, OfflineChatClient
from agent_host._http.openai_responses import ResponseRef


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> MemoryFunctionApp:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)
    agent = make_agent(OfflineChatClient())
    return memory_app(agent, conversation_owners=True, enable_mcp_tool_trigger=True, inspector=True)


def test_the_admin_key_reads_and_changes_any_conversation(host: MemoryFunctionApp) -> None:
    started(host)

    read = host.request("GET", f"{C1}/messages", headers=ADMIN)
    turn = host.request("POST", f"{C1}/turns", {"message": "What is my name?"}, headers=ADMIN)
    owner_after = host.request("GET", C1, headers=ALICE)

    assert read.status == 200 and read.json()["messages"][0]["text"] == "My name is Ada."
    assert turn.status == 200 and turn.json()["text"] == "[offline model] Your name is Ada."
    assert owner_after.status == 200 and owner_after.json()["turnCount"] == 2  # still Alice's


@pytest.mark.parametrize("headers", [{}, {"x-functions-key": "not-the-admin-key"}], ids=["nothing", "function-key"])
def test_a_request_naming_no_principal_is_401(host: MemoryFunctionApp, headers: dict[str, str]) -> None:
    turn = host.request("POST", f"{C1}/turns", {"message": "Hi"}, headers=headers)
    listing = host.request("GET", CONVERSATIONS, headers=headers)
    tool = call_mcp_tool(host, "assistant", {"query": "Hi", "sessionId": "c1"}, headers=headers)

    for reply in (turn, listing):
        assert reply.status == 401
        assert reply.json()["error"]["code"] == "unauthenticated"
    assert tool.is_error and tool.structured_content["error"]["code"] == "unauthenticated"
    assert host.request("GET", C1, headers=ADMIN).status == 404  # nothing was created


def test_a_retention_change_creates_a_conversation_its_principal_owns(host: MemoryFunctionApp) -> None:
    retention = {"mode": "auto", "maxStateBytes": 300000}
    created = host.request("PUT", f"{CONVERSATIONS}/r1/retention", retention, headers=BOB)

    assert created.status == 200, created.body
    assert host.request("GET", f"{CONVERSATIONS}/r1", headers=BOB).status == 200
    other = host.request("GET", f"{CONVERSATIONS}/r1", headers=ALICE)
    assert other.status == 404 and other.json() == ConversationNotFoundError("assistant", "r1").body()


def test_a_deleted_conversation_reads_as_never_existing_to_another_principal(host: MemoryFunctionApp) -> None:
    started(host)
    assert host.request("DELETE", C1, headers=ALICE).status == 204

    owner = host.request("GET", C1, headers=ALICE)
    other = host.request("GET", C1, headers=BOB)
    taken = host.request("POST", f"{C1}/turns", {"message": "Mine now?"}, headers=BOB)

    assert owner.json() == ConversationNotFoundError("assistant", "c1", deleted=True).body()
    assert other.json() == ConversationNotFoundError("assistant", "c1").body()
    assert taken.status == 404  # the id stays its owner's


def test_another_principal_cannot_reach_a_conversation_through_the_openai_responses_api(
    host: MemoryFunctionApp,
) -> None:
    turn_id = started(host)
    before = snapshot(host)
    alices = ResponseRef("assistant", "c1", turn_id).response_id
    responses = "/api/openai/v1/responses"

    continued = host.request(
        "POST", responses, {"model": "assistant", "input": "Name?", "conversation": "c1"}, headers=BOB
    )
    chained = host.request(
        "POST", responses, {"model": "assistant", "input": "Name?", "previous_response_id": alices}, headers=BOB
    )
    retrieved = host.request("GET", f"{responses}/{alices}", headers=BOB)
    own = host.request("GET", f"{responses}/{alices}", headers=ALICE)

    assert [reply.status for reply in (continued, chained, retrieved)] == [404, 404, 404]
    assert continued.json()["error"]["code"] == "conversation_not_found"
    assert retrieved.json()["error"]["code"] == "conversation_not_found"
    assert own.status == 200 and own.json()["status"] == "completed"
    assert snapshot(host) == before
