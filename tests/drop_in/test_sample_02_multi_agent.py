"""Sample 02 (multi agent) of agent-framework-azurefunctions, as our own app: two agents with tools, added one by one
(`drop_in_agents.multi_agent_app`); each answers with its tool's result, and the legacy `thread_id` continues a
conversation.
"""

from __future__ import annotations

import json

from drop_in_agents import multi_agent_app
from drop_in_hosts import module_host, run_agent
from hosting import RunningHost

two_agents = module_host(multi_agent_app)


def test_02_each_agent_answers_with_its_tools_result(two_agents: RunningHost) -> None:
    weather = run_agent(two_agents, "WeatherAgent", {"message": "use get_weather location=Seattle", "thread_id": "w-1"})
    tip = run_agent(two_agents, "MathAgent", {"message": "use calculate_tip bill_amount=50 tip_percentage=20"})

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
    run_agent(two_agents, "MathAgent", {"message": "My bill is 80 dollars.", "thread_id": "math-user-001"})
    second = run_agent(two_agents, "MathAgent", {"message": "What is my bill?", "thread_id": "math-user-001"})

    assert second.json()["session_id"] == "math-user-001"
    assert second.json()["response"] == "[offline model] Your bill is 80 dollars."


def test_02_a_request_not_waited_for_is_accepted_with_its_ids(two_agents: RunningHost) -> None:
    reply = run_agent(
        two_agents, "MathAgent", {"message": "Tip on 20?", "thread_id": "math-2", "wait_for_response": False}
    )

    assert reply.status == 202 and reply.json()["status"] == "accepted"
    assert reply.json()["session_id"] == "math-2" and reply.json()["correlation_id"]


def test_02_health_lists_both_agents_added_one_by_one(two_agents: RunningHost) -> None:
    agents = two_agents.request("GET", "/api/health").json()["agents"]

    assert [agent["name"] for agent in agents] == ["WeatherAgent", "MathAgent"]
