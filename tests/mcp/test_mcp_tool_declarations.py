"""The app side of MCP tools without a host: declarations, the registry, argument parsing and the result envelope."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from agent_framework import Message
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient

from agent_host import InvalidRequestError
from agent_host._mcp.agent_tool import parse_agent_tool_call
from agent_host._mcp.results import answer_result, error_result
from agent_host._mcp.tools import McpToolRegistry, agent_tool, require_result_schema_support, workflow_tool
from agent_host._mcp.workflow_input import workflow_input


def context(transport_session: str = "transport-session", **arguments: object) -> str:
    """An invocation context as the extension sends it (the transport's session is not the conversation)."""
    return json.dumps({"name": "assistant", "arguments": arguments, "sessionid": transport_session})


def test_a_key_without_a_session_id_names_the_same_conversation_on_every_retry_in_its_mcp_session() -> None:
    first = parse_agent_tool_call(context(query="hi", idempotencyKey="k1"), "assistant", 1000)
    retry = parse_agent_tool_call(context(query="hi", idempotencyKey="k1"), "assistant", 1000)
    other_agent = parse_agent_tool_call(context(query="hi", idempotencyKey="k1"), "billing", 1000)
    other_client = parse_agent_tool_call(context("other-session", query="hi", idempotencyKey="k1"), "assistant", 1000)

    assert first.session_id == retry.session_id
    assert first.session_id.startswith("mcp-") and len(first.session_id) == 36
    assert other_agent.session_id != first.session_id
    assert other_client.session_id not in (first.session_id, other_agent.session_id)
    assert (first.idempotency_key, first.caller_key) == ("k1", True)


def test_a_call_without_a_key_gets_a_fresh_one_and_a_fresh_conversation() -> None:
    one = parse_agent_tool_call(context(query="hi"), "assistant", 1000)
    two = parse_agent_tool_call(context(query="hi"), "assistant", 1000)

    assert one.caller_key is False
    assert one.idempotency_key.startswith("mcp-") and one.idempotency_key != two.idempotency_key
    assert one.session_id != two.session_id
    assert one.session_id != "transport-session"


def test_a_blank_session_id_counts_as_absent_like_the_published_host() -> None:
    call = parse_agent_tool_call(context(query="hi", sessionId=" ", threadId="t-1"), "assistant", 1000)

    assert call.session_id == "t-1"


def test_an_invocation_context_that_is_not_json_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestError, match="not JSON") as raised:
        parse_agent_tool_call("{oops", "assistant", 1000)

    assert raised.value.code == "invalid_json"


def test_tool_names_are_unique_ignoring_case_across_every_kind_of_tool() -> None:
    registry = McpToolRegistry()
    registry.add(agent_tool("Support", None))

    with pytest.raises(ValueError, match="'support' is taken"):
        registry.add(agent_tool("support", None))


def test_an_empty_description_falls_back_to_the_published_hosts_default() -> None:
    assert agent_tool("writer", "   ").description == "Interact with writer agent"
    assert agent_tool("writer", " Writes. ").description == "Writes."


@pytest.mark.parametrize("version", ["1.21.0", "1.24.0", "1.25.0b1"])
def test_an_azure_functions_that_drops_use_result_schema_is_refused(version: str) -> None:
    with pytest.raises(RuntimeError, match=r"azure-functions 1\.26 or later"):
        require_result_schema_support(version)


@pytest.mark.parametrize("version", ["1.26.0", "1.27.1", "2.3.0"])
def test_azure_functions_versions_that_write_use_result_schema_are_accepted(version: str) -> None:
    require_result_schema_support(version)


def test_the_app_refuses_an_mcp_tool_before_it_registers_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_host._mcp.tools as tools

    monkeypatch.setattr(tools.func, "__version__", "1.25.0")
    app = build_app()

    with pytest.raises(RuntimeError, match="enable_mcp_tool_trigger needs"):
        app.add_agent(make_agent(ScriptedChatClient()), enable_mcp_tool_trigger=True)

    assert app.agents == {}
    assert app.mcp_tools.tools == []


def test_results_are_the_extensions_call_tool_result_envelope() -> None:
    envelope = json.loads(answer_result("assistant", "c1", "t1", "Hello.", []))
    failed = json.loads(
        json.loads(error_result({"code": "turn_failed", "message": "It failed."}, session_id="c1"))["content"]
    )

    assert envelope["type"] == "call_tool_result"
    assert json.loads(envelope["content"]) == {
        "content": [
            {"type": "text", "text": "Hello."},
            {
                "type": "text",
                "text": 'sessionId: c1 (call assistant again with sessionId "c1" to continue this conversation)',
            },
        ],
        "structuredContent": {"status": "completed", "response": "Hello.", "sessionId": "c1", "turnId": "t1"},
        "isError": False,
    }
    assert failed == {
        "content": [{"type": "text", "text": "turn_failed: It failed."}],
        "structuredContent": {
            "status": "failed",
            "error": {"code": "turn_failed", "message": "It failed."},
            "sessionId": "c1",
        },
        "isError": True,
    }


def test_a_turn_waiting_for_tool_approval_says_so_and_where_to_answer() -> None:
    approvals = [{"id": "ap-1", "toolName": "delete_file", "arguments": {"path": "a.txt"}}]

    result = json.loads(json.loads(answer_result("assistant", "c1", "t1", "", approvals))["content"])

    assert result["structuredContent"]["approvalRequests"] == approvals
    assert "delete_file (approval id ap-1)" in result["content"][2]["text"]
    assert "POST /api/agents/assistant/conversations/c1/turns" in result["content"][2]["text"]


@dataclass
class Article:
    """A structured input with a field named `title` (pydantic also names every schema `title`)."""

    title: str
    words: int = 100


def test_a_workflow_that_takes_text_has_a_string_input_that_is_never_decoded() -> None:
    shape = workflow_input("digest", [Message, str])

    assert (shape.type, shape.is_array) == ("string", False)
    assert shape.tool_property().to_binding()["propertyType"] == "string"
    assert shape.value('{"not": "decoded"}') == '{"not": "decoded"}'


def test_a_structured_input_is_an_object_whose_schema_keeps_a_field_named_title() -> None:
    shape = workflow_input("publish", [Article])

    assert shape.type == "object"
    assert (
        'of schema {"description":"A structured input with a field named `title` (pydantic also names every schema '
        '`title`).","properties":{"title":{"type":"string"},"words":{"default":100,"type":"integer"}},"required":'
        '["title"],"type":"object"}'
    ) in shape.description
    assert shape.value('{"title": "Hi"}') == {"title": "Hi"}
    assert shape.value({"title": "Hi"}) == {"title": "Hi"}
    assert shape.value("not JSON") == "not JSON"  # passed on: the start refuses it, naming the type it takes


@pytest.mark.parametrize(
    ("input_types", "kind", "is_array"),
    [
        ([int], "integer", False),
        ([float], "number", False),
        ([bool], "boolean", False),
        ([list[str]], "string", True),
        ([list[Article]], "object", True),
        ([dict[str, int]], "object", False),
        ([Article, dict[str, str]], "object", False),
        ([Message], "string", False),
    ],
)
def test_a_workflow_input_type_becomes_the_json_type_of_its_property(
    input_types: list[Any], kind: str, is_array: bool
) -> None:
    shape = workflow_input("wf", input_types)

    assert (shape.type, shape.is_array, shape.decodes_text) == (kind, is_array, True)


def test_a_workflow_tool_takes_no_required_property_and_is_named_after_the_workflow() -> None:
    tool = workflow_tool("Review", None, workflow_input("Review", [str]).tool_property())

    binding = tool.trigger_arguments()

    assert (tool.function_name, tool.target, binding["tool_name"]) == ("mcptool_review", "workflow", "Review")
    assert [p["isRequired"] for p in json.loads(binding["tool_properties"])] == [False] * 5
    assert workflow_tool("Review", " Reviews drafts. ", tool.properties[0]).description == "Reviews drafts."
