"""Sample 10 (workflow without shared state) of agent-framework-azurefunctions, as our own app
(`drop_in_workflows.no_shared_state_app`): the workflow starts at an agent, which takes a JSON object as its JSON
text, and switches on its verdict. With no `output_from`, core counts every executor's answer as an output: the
published routes show only what the non-agent executors yielded, ours keep core's in-process result."""

from __future__ import annotations

import json
from typing import Any

from chat_clients import ScriptedChatClient
from drop_in_hosts import module_host, path_of, poll
from drop_in_workflows import no_shared_state_app, spam_filter
from hosting import RunningHost

SPAM_MODEL = ScriptedChatClient(spam_filter)


host = module_host(lambda: no_shared_state_app(SPAM_MODEL))


def finished(host: RunningHost, email: dict[str, Any]) -> Any:
    started = host.request("POST", "/api/workflow/email_triage/run", email)
    assert started.status == 202
    return poll(host, path_of(started.json()["statusQueryGetUri"]), lambda r: r.json()["runtimeStatus"] == "Completed")


def test_10_the_start_agent_reads_the_json_object_as_its_text(host: RunningHost) -> None:
    email = {"email_id": "e-1", "email_content": "Lunch on Friday?"}
    SPAM_MODEL.calls.clear()

    status = finished(host, email)

    text = json.dumps(email)
    assert SPAM_MODEL.calls[0][-1].text == text
    assert status.json()["output"] == [f"Email sent: [offline model] {text}"]


def test_10_a_spam_email_is_handled_by_the_switch_cases_handler(host: RunningHost) -> None:
    status = finished(host, {"email_id": "e-2", "email_content": "URGENT! You have won a prize!"})

    assert status.json()["output"] == ["Email marked as spam: it says URGENT, won"]


def test_10_our_route_keeps_cores_outputs_the_agents_answers_included(host: RunningHost) -> None:
    status = finished(host, {"email_id": "e-3", "email_content": "Meeting notes attached."})

    ours = host.request("GET", f"/api/workflows/email_triage/runs/{status.json()['instanceId']}").json()["outputs"]

    published = status.json()["output"]
    assert len(published) == 1 and published[0] in ours
    assert [output["type"] for output in ours if isinstance(output, dict)] == ["agent_response", "agent_response"]
