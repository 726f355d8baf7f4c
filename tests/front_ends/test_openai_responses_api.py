"""The OpenAI Responses API front door, driven by the official `openai` SDK against the in-memory app (`front_doors`).

Each conversation the SDK holds is read back through our own API, so the test shows it is the same one. Streaming in
both function shapes, the function key and background turns are the local host's (tests/e2e/test_openai_responses.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from agent_framework import Agent, Message
from agent_framework_openai import OpenAIChatClient
from approval_tools import executed, refund
from apps import make_agent
from chat_clients import EchoScript, FailingChatClient, ScriptedChatClient
from front_doors import BASE_URL, memory_app
from hosting import stored_messages
from streams import MemoryTurnStreamStore, parse_sse

from agent_host import OfflineChatClient

KEY = "test-key"
HEADERS = {"x-functions-key": KEY}


class Host:
    """The in-memory app serving `assistant` (the offline model, with an approval-gated tool), `scripted` (a model
    that records what it is sent) and `failing` (a model that raises), and an OpenAI client on it."""

    def __init__(self) -> None:
        self.script = EchoScript()
        self.store = MemoryTurnStreamStore()
        assistant = make_agent(OfflineChatClient(word_delay_seconds=0), tools=[refund])
        scripted = make_agent(ScriptedChatClient(self.script), name="scripted")
        failing = make_agent(FailingChatClient(), name="failing")
        self.running = memory_app(assistant, scripted, failing, stream_store=self.store)
        self.base_url = f"{BASE_URL}/api/openai/v1"
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=KEY,
            default_headers=HEADERS,
            max_retries=0,
            http_client=httpx.Client(transport=self.running.transport()),
        )

    def messages(self, conversation_id: str) -> list[dict]:
        return stored_messages(self.running, "assistant", conversation_id, HEADERS)


@pytest.fixture
def host() -> Iterator[Host]:
    running = Host()
    try:
        yield running
    finally:
        running.client.close()


def test_previous_response_id_continues_the_conversation_our_api_reads_back(host: Host) -> None:
    first = host.client.responses.create(model="assistant", input="My name is Ada.")
    second = host.client.responses.create(model="assistant", input="What is my name?", previous_response_id=first.id)
    unrelated = host.client.responses.create(model="assistant", input="What is my name?")

    assert first.status == "completed" and first.model == "assistant" and first.id.startswith("resp_")
    assert "Ada" in second.output_text
    assert "Ada" not in unrelated.output_text
    assert second.previous_response_id == first.id
    assert second.conversation is not None and first.conversation is not None
    assert second.conversation.id == first.conversation.id != unrelated.conversation.id
    texts = [message["text"] for message in host.messages(first.conversation.id)]
    assert texts == ["My name is Ada.", first.output_text, "What is my name?", second.output_text]


def test_a_conversation_id_names_our_conversation(host: Host) -> None:
    host.client.responses.create(model="assistant", input="My city is Paris.", conversation="conv_trip")
    answer = host.client.responses.create(model="assistant", input="What is my city?", conversation={"id": "conv_trip"})

    assert "Paris" in answer.output_text
    assert answer.conversation is not None and answer.conversation.id == "conv_trip"
    assert host.messages("conv_trip")[0]["text"] == "My city is Paris."


def test_input_messages_are_the_turns_messages_in_their_roles(host: Host) -> None:
    answer = host.client.responses.create(
        model="assistant",
        input=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "My name is Ada."}]},
            {"type": "message", "role": "user", "content": "What is my name?"},
        ],
    )

    assert "Ada" in answer.output_text
    assert answer.conversation is not None
    stored = [(message["role"], message["text"]) for message in host.messages(answer.conversation.id)]
    assert stored[:3] == [("system", "Be brief."), ("user", "My name is Ada."), ("user", "What is my name?")]


def test_retrieve_reads_the_stored_turn_as_the_same_response(host: Host) -> None:
    created = host.client.responses.create(model="assistant", input="My name is Ada.")
    retrieved = host.client.responses.retrieve(created.id)
    replayed = parse_sse(
        host.running.request("GET", f"/api/openai/v1/responses/{created.id}?stream=true", headers=HEADERS).body
    )

    assert retrieved.id == created.id
    assert retrieved.status == "completed"
    assert retrieved.output_text == created.output_text != ""
    assert retrieved.created_at == created.created_at
    assert retrieved.usage is not None and retrieved.usage.total_tokens > 0
    # A turn run without streaming is replayed from its receipt as the same events.
    deltas = [event.data["delta"] for event in replayed if event.event == "response.output_text.delta"]
    assert "".join(deltas) == created.output_text
    assert replayed[-1].data["response"]["id"] == created.id


def test_models_lists_the_agents(host: Host) -> None:
    models = host.client.models.list()
    one = host.client.models.retrieve("scripted")

    assert [model.id for model in models] == ["assistant", "scripted", "failing"]
    assert one.id == "scripted" and one.owned_by == "agent-host"


def test_an_unknown_model_is_not_found_with_our_message(host: Host) -> None:
    with pytest.raises(openai.NotFoundError, match="No agent named 'gpt-4o'") as raised:
        host.client.responses.create(model="gpt-4o", input="hi")

    assert raised.value.code == "agent_not_found"
    assert raised.value.param == "model"
    assert raised.value.type == "invalid_request_error"


def test_bad_input_is_a_bad_request_naming_the_field(host: Host) -> None:
    with pytest.raises(openai.BadRequestError) as wrong_item:
        host.client.responses.create(
            model="assistant", input=[{"type": "function_call_output", "call_id": "c1", "output": "42"}]
        )
    with pytest.raises(openai.BadRequestError, match="Unknown parameter: 'colour'"):
        host.client.responses.create(model="assistant", input="hi", extra_body={"colour": "teal"})
    with pytest.raises(openai.BadRequestError, match="input is empty") as empty:
        host.client.responses.create(model="assistant", input="  ")
    with pytest.raises(openai.BadRequestError, match="- temperature must be from 0 to 2, got 3") as hot:
        host.client.responses.create(model="assistant", input="hi", temperature=3)
    with pytest.raises(openai.BadRequestError, match="tool_choice must be") as hosted:
        host.client.responses.create(model="assistant", input="hi", tool_choice={"type": "web_search_preview"})

    assert wrong_item.value.param == "input[0].type"
    assert empty.value.code == "missing_message"
    assert (hot.value.param, hot.value.code) == ("temperature", "invalid_options")
    assert hosted.value.param == "tool_choice"


def test_an_unknown_previous_response_is_not_found(host: Host) -> None:
    with pytest.raises(openai.NotFoundError, match="No response with id 'resp_bogus'") as raised:
        host.client.responses.create(model="assistant", input="hi", previous_response_id="resp_bogus")
    with pytest.raises(openai.NotFoundError):
        host.client.responses.retrieve("resp_bogus")

    assert raised.value.param == "previous_response_id"


def test_a_deleted_conversation_is_not_continued_from_its_old_response(host: Host) -> None:
    first = host.client.responses.create(model="assistant", input="My name is Ada.")
    assert first.conversation is not None
    path = f"/api/agents/assistant/conversations/{first.conversation.id}"
    assert host.running.request("DELETE", path, headers=HEADERS).status == 204

    with pytest.raises(openai.NotFoundError, match="was deleted"):
        host.client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError) as continued:
        host.client.responses.create(model="assistant", input="What is my name?", previous_response_id=first.id)

    assert continued.value.param == "previous_response_id"
    assert host.running.request("GET", path, headers=HEADERS).status == 404  # nothing started again


def test_an_idempotency_key_runs_the_model_once(host: Host) -> None:
    key = {"Idempotency-Key": "order-17"}
    first = host.client.responses.create(model="scripted", input="hello", extra_headers=key)
    retry = host.client.responses.create(model="scripted", input="hello", extra_headers=key)
    with pytest.raises(openai.ConflictError, match="order-17"):
        host.client.responses.create(model="scripted", input="something else", extra_headers=key)

    assert retry.id == first.id and retry.output_text == first.output_text == "echo: hello"
    assert len(host.script.sent) == 1


def test_instructions_options_and_text_format_reach_the_model(host: Host) -> None:
    host.script.next_answer = '{"city": "Paris"}'
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    answer = host.client.responses.create(
        model="scripted",
        input="Where?",
        instructions="Answer in JSON.",
        temperature=0.5,
        max_output_tokens=50,
        text={"format": {"type": "json_schema", "name": "place", "schema": schema}},
        metadata={"ticket": "T-1"},
        store=True,
    )

    _, options = host.script.sent[-1]
    assert json.loads(answer.output_text) == {"city": "Paris"}
    assert options["temperature"] == 0.5 and options["max_tokens"] == 50
    assert "Answer in JSON." in options["instructions"]
    assert options["response_format"]["json_schema"]["name"] == "place"
    assert answer.instructions == "Answer in JSON." and answer.metadata == {"ticket": "T-1"}


def test_an_approval_request_is_answered_with_an_mcp_approval_response(host: Host) -> None:
    executed.clear()
    asked = host.client.responses.create(model="assistant", input="please refund order_id=A17")
    request = next(item for item in asked.output if item.type == "mcp_approval_request")
    approved = host.client.responses.create(
        model="assistant",
        previous_response_id=asked.id,
        input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
    )

    assert request.name == "refund" and json.loads(request.arguments) == {"order_id": "A17"}
    assert request.server_label == "assistant"
    assert executed == ["A17"]
    assert approved.output_text == "[offline model] The tool returned: Refunded A17."


def test_a_failed_turn_is_a_failed_response_not_an_error_the_sdk_retries(host: Host) -> None:
    failed = host.client.responses.create(model="failing", input="hello")
    retrieved = host.client.responses.retrieve(failed.id)

    assert failed.status == retrieved.status == "failed"
    assert failed.error is not None and failed.error.code == "turn_failed"
    assert retrieved.error is not None and retrieved.error.message == failed.error.message
    assert failed.output == []


def test_every_error_of_the_routes_has_the_openai_shape(host: Host) -> None:
    wrong_method = host.running.request("DELETE", "/api/openai/v1/models", headers=HEADERS)
    not_json = host.running.request("POST", "/api/openai/v1/responses", headers=HEADERS, raw=b"{")

    assert wrong_method.status == 405
    assert wrong_method.json()["error"]["type"] == "invalid_request_error"
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"
    assert not_json.status == 400
    assert set(not_json.json()["error"]) == {"message", "type", "param", "code"}


def test_agent_frameworks_own_responses_client_runs_a_remote_agent_on_the_host(host: Host) -> None:
    # Agent Framework's OpenAIChatClient keeps the conversation in the service (previous_response_id) and maps
    # mcp_approval_request items to its function approval requests: our agent becomes its model.
    executed.clear()

    async def conversation() -> tuple[str, list[str], str, str]:
        service = openai.AsyncOpenAI(
            base_url=host.base_url,
            api_key=KEY,
            default_headers=HEADERS,
            max_retries=0,
            http_client=httpx.AsyncClient(transport=host.running.transport()),
        )
        try:
            remote = Agent(OpenAIChatClient(model="assistant", async_client=service), name="remote")
            session = remote.create_session()
            await remote.run("My name is Ada.", session=session)
            recalled = await remote.run("What is my name?", session=session)
            asked = await remote.run("please refund order_id=A17", session=session)
            requests = [c for m in asked.messages for c in m.contents if c.type == "function_approval_request"]
            answer = Message("user", [request.to_function_approval_response(True) for request in requests])
            approved = await remote.run(answer, session=session)
            streamed = await remote.run("What is my name?", session=session, stream=True).get_final_response()
            return recalled.text, [request.function_call.name for request in requests], approved.text, streamed.text
        finally:
            await service.close()

    recalled, tools, approved, streamed = asyncio.run(conversation())

    assert recalled == streamed == "[offline model] Your name is Ada."
    assert tools == ["refund"] and executed == ["A17"]
    assert approved == "[offline model] The tool returned: Refunded A17."
