"""The OpenAI Responses API front door on the local host, driven by the official `openai` SDK: streaming in both
function shapes, the function key, and a background turn that settles later. Its request and response shapes run on
the in-memory app (tests/front_ends/test_openai_responses_api.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from approval_tools import refund
from apps import build_app, make_agent
from chat_clients import EchoScript, FailingChatClient, ScriptedChatClient
from hosting import RunningHost, stored_messages
from streams import MemoryTurnStreamStore, parse_sse

from agent_host import OfflineChatClient

KEY = "test-key"
HEADERS = {"x-functions-key": KEY}


class Host:
    """The local host serving `assistant` (the offline model, with an approval-gated tool), `scripted` (a model
    that records what it is sent) and `failing` (a model that raises)."""

    def __init__(self, tmp_path: Path, *, http_streams: bool = False) -> None:
        self.script = EchoScript()
        self.store = MemoryTurnStreamStore()
        assistant = make_agent(OfflineChatClient(word_delay_seconds=0), tools=[refund])
        scripted = make_agent(ScriptedChatClient(self.script), name="scripted")
        failing = make_agent(FailingChatClient(), name="failing")
        self.running = RunningHost(
            lambda: build_app(assistant, scripted, failing, stream_store=self.store, http_streams=http_streams),
            tmp_path,
            function_key=KEY,
        )
        assert self.running.host is not None
        self.base_url = f"{self.running.host.base_url}/api/openai/v1"
        self.client = openai.OpenAI(base_url=self.base_url, api_key=KEY, default_headers=HEADERS, max_retries=0)

    def messages(self, conversation_id: str) -> list[dict]:
        return stored_messages(self.running, "assistant", conversation_id, HEADERS)


@pytest.fixture
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    """The host with classic HTTP functions (a stream is sent whole), or with HTTP streams (`streams`: as produced)."""
    running = Host(tmp_path, http_streams=getattr(request, "param", "classic") == "streams")
    try:
        yield running
    finally:
        running.client.close()
        running.running.stop()


@pytest.mark.parametrize("host", ["classic", "streams"], indirect=True)
def test_responses_stream_sends_the_responses_events_and_the_final_text(host: Host) -> None:
    with host.client.responses.stream(model="assistant", input="My name is Ada and my city is Paris.") as stream:
        events = list(stream)
        final = stream.get_final_response()

    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[2:4] == ["response.output_item.added", "response.content_part.added"]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = [event.item.id for event in events if event.type == "response.output_item.added"]
    assert added == [item.id for item in final.output]
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert deltas
    assert "".join(deltas) == final.output_text
    assert "Ada" in final.output_text and final.status == "completed"
    numbers = [event.sequence_number for event in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert final.conversation is not None
    assert host.messages(final.conversation.id)[-1]["text"] == final.output_text


@pytest.mark.parametrize("host", ["classic", "streams"], indirect=True)
def test_a_stream_resumes_after_a_sequence_number(host: Host) -> None:
    events = list(host.client.responses.create(model="assistant", input="My name is Ada.", stream=True))
    response_id = events[0].response.id
    middle = events[len(events) // 2].sequence_number

    path = f"/api/openai/v1/responses/{response_id}?stream=true&starting_after={middle}"
    resumed = parse_sse(host.running.request("GET", path, headers=HEADERS).body)

    expected = [(event.type, event.sequence_number) for event in events if event.sequence_number > middle]
    assert [(event.event, event.data["sequence_number"]) for event in resumed] == expected
    assert "Ada" in resumed[-1].data["response"]["output"][0]["content"][0]["text"]
    assert middle > 1 and resumed[-1].event == "response.completed"


def test_the_key_goes_in_x_functions_key_as_the_functions_host_reads_it(host: Host) -> None:
    with (
        openai.OpenAI(base_url=host.base_url, api_key=KEY, max_retries=0) as bearer_only,
        pytest.raises(openai.AuthenticationError),
    ):
        bearer_only.models.list()


def test_a_background_response_is_in_progress_until_its_turn_settles(host: Host) -> None:
    started = host.client.responses.create(model="assistant", input="My name is Ada.", background=True)
    host.running.wait_idle()
    settled = host.client.responses.retrieve(started.id)

    assert started.status == "in_progress" and started.output == []
    assert settled.status == "completed" and "Ada" in settled.output_text
