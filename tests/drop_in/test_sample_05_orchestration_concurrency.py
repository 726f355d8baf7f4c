"""Sample 05 (multi-agent orchestration, concurrency) of agent-framework-azurefunctions, as our own app
(`drop_in_orchestrations.concurrency_app`): two agents answer at once through `task_all`; one of them has no HTTP
routes, as the app's `enable_http_endpoints=False` and `add_agent(enable_http_endpoint=True)` decide."""

from __future__ import annotations

from drop_in_hosts import module_host, path_of, poll
from drop_in_orchestrations import concurrency_app
from hosting import RunningHost

TEXT = {"Content-Type": "text/plain"}


host = module_host(concurrency_app)


def test_05_both_agents_answer_the_prompt_at_once(host: RunningHost) -> None:
    started = host.request("POST", "/api/multiagent/run", headers=TEXT, raw=b"What is temperature?")
    status = poll(
        host, path_of(started.json()["statusQueryGetUri"]), lambda r: r.json()["runtimeStatus"] == "Completed"
    )

    answer = '[offline model] You said: "What is temperature?". (0 earlier messages in this conversation.)'
    assert started.status == 202 and started.json()["prompt"] == "What is temperature?"
    assert status.json()["output"] == {"physicist": answer, "chemist": answer}
    assert status.json()["input"] == "What is temperature?"


def test_05_an_empty_prompt_is_400(host: RunningHost) -> None:
    reply = host.request("POST", "/api/multiagent/run", headers=TEXT, raw=b"  ")

    assert (reply.status, reply.json()) == (400, {"error": "Prompt is required"})


def test_05_only_the_agent_with_http_routes_answers_over_http(host: RunningHost) -> None:
    chemist = host.request("POST", "/api/agents/ChemistAgent/run", {"message": "What is an ion?"})
    physicist = host.request("POST", "/api/agents/PhysicistAgent/run", {"message": "What is a photon?"})
    health = host.request("GET", "/api/health").json()["agents"]

    assert chemist.status == 404 and chemist.json()["error"]["code"] == "agent_not_found"
    assert physicist.status == 200 and physicist.json()["status"] == "success"
    assert {agent["name"]: agent["http_endpoint_enabled"] for agent in health} == {
        "PhysicistAgent": True,
        "ChemistAgent": False,
    }
