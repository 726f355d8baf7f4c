"""Sample 02 (multi agent) of agent-framework-azurefunctions, as our own app: two agents with tools, added one by one
(`drop_in_agents.multi_agent_app`); each answers with its tool's result, and the legacy `thread_id` continues a
conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from drop_in_agents import multi_agent_app
from drop_in_hosts import serving
from hosting import RunningHost


def run(host: RunningHost, agent: str, body: Any, **kwargs: Any) -> Any:
    """A `/run` request as the sample's clients send it."""
    return host.request("POST", f"/api/agents/{agent}/run", body, **kwargs)


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHost]:
    with serving(multi_agent_app, tmp_path_factory.mktemp("02")) as running:
        yield running


def test_02_each_agent_answers_with_its_tools_result(two_agents: RunningHost) -> None:
    weather = run(two_agents, "WeatherAgent", {"message": "use get_weather location=Seattle", "thread_id": "w-1"})
    tip = run(two_agents, "MathAgent", {"message": "use calculate_tip bill_amount=50 tip_percentage=20"})

    assert weather.status == 200 and weather.json()["status"] == "success"
    assert weather.json()["response"].startswith("[offline model] The tool returned: ")
    assert json.loads(weather.json()["response"].removeprefix("[offline model] The tool returned: ")) == {
        "location": "Seattle",
        "temperature": 72,
        "conditions": "Sunny",
        "humidity": 45,
    }
    assert json.loads(tip.json()["response"].removeprefix("[offline model] The tool returned: ")) == {
        "bill_amount": 50.0,
        "tip_percentage": 20.0,
        "tip_amount": 10.0,
        "total": 60.0,
    }


def test_02_the_legacy_thread_id_continues_a_conversation(two_agents: RunningHost) -> None:
    run(two_agents, "MathAgent", {"message": "My bill is 80 dollars.", "thread_id": "math-user-001"})
    second = run(two_agents, "MathAgent", {"message": "What is my bill?", "thread_id": "math-user-001"})

    assert second.json()["session_id"] == "math-user-001"
    assert second.json()["response"] == "[offline model] Your bill is 80 dollars."


def test_02_a_request_not_waited_for_is_accepted_with_its_ids(two_agents: RunningHost) -> None:
    reply = run(two_agents, "MathAgent", {"message": "Tip on 20?", "thread_id": "math-2", "wait_for_response": False})

    assert reply.status == 202 and reply.json()["status"] == "accepted"
    assert reply.json()["session_id"] == "math-2" and reply.json()["correlation_id"]


def test_02_health_lists_both_agents_added_one_by_one(two_agents: RunningHost) -> None:
    agents = two_agents.request("GET", "/api/health").json()["agents"]

    assert [agent["name"] for agent in agents] == ["WeatherAgent", "MathAgent"]
