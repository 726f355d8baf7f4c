"""The Responses API front door's pure parts: response ids, request fields, input items, the error shape."""

from __future__ import annotations

import base64
import json

import pytest

from agent_host import AgentNotFoundError, InvalidRequestError, ResponseNotFoundError
from agent_host._contract import AgentRoute
from agent_host._http.openai_responses import (
    ResponseRef,
    parse_response_id,
    parse_responses_request,
    render_openai_error,
)

AGENTS = {"assistant": AgentRoute("assistant", "conversation_assistant", "durable")}


def forged(raw: str) -> str:
    return "resp_" + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def test_a_response_id_names_its_agent_conversation_and_turn_and_reads_back() -> None:
    ref = ResponseRef("assistant", "conv_1.a-b", "1a22fd5d84fb96572e")

    assert ref.response_id.startswith("resp_") and "=" not in ref.response_id
    assert parse_response_id(ref.response_id, AGENTS) == ref


@pytest.mark.parametrize(
    "response_id",
    [
        "resp_",
        "msg_YXNzaXN0YW50L2MxLzFhMjJmZA",  # another prefix
        "resp_!!!",  # not base64url
        forged("assistant/c1"),  # two parts
        forged("assistant/c1/1a22fd/extra"),  # four parts
        forged("support/c1/1a22fd5d84fb96572e"),  # an agent the app does not serve
        forged("assistant/../1a22fd5d84fb96572e"),  # not a conversation id
        forged("assistant/c1/not a turn"),  # not a turn id
        "resp_" + "A" * 500,
    ],
)
def test_an_id_this_app_did_not_issue_is_not_found(response_id: str) -> None:
    with pytest.raises(ResponseNotFoundError) as raised:
        parse_response_id(response_id, AGENTS, "previous_response_id")

    assert raised.value.param == "previous_response_id"


def test_unknown_and_mistyped_fields_name_the_field() -> None:
    with pytest.raises(InvalidRequestError, match="Unknown parameter: 'colour'") as unknown:
        parse_responses_request(json.dumps({"model": "assistant", "input": "hi", "colour": "teal"}))
    with pytest.raises(InvalidRequestError, match="Missing required parameter: 'model'"):
        parse_responses_request(json.dumps({"input": "hi"}))
    with pytest.raises(InvalidRequestError) as mistyped:
        parse_responses_request(json.dumps({"model": "assistant", "input": "hi", "text": {"format": {"type": "x"}}}))

    assert unknown.value.param == "colour"
    assert mistyped.value.param == "text.format.type"


def test_the_error_shape_is_openais_with_our_code_and_status() -> None:
    error = AgentNotFoundError("gpt-4o", ["assistant"])
    error.param = "model"

    response = render_openai_error(error)

    assert response.status_code == 404
    assert json.loads(response.get_body()) == {
        "error": {
            "message": "No agent named 'gpt-4o' is registered. Known agents: assistant.",
            "type": "invalid_request_error",
            "param": "model",
            "code": "agent_not_found",
        }
    }
