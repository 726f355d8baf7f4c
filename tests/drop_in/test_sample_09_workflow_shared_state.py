"""Sample 09 (workflow with shared state) of agent-framework-azurefunctions, as our own app
(`drop_in_workflows.shared_state_app`): an email stored in the workflow's state by id, a spam verdict, and either
the spam handler or the email assistant. The published routes show only what `output_from` names."""

from __future__ import annotations

from typing import Any

import pytest
from drop_in_hosts import module_host, path_of, poll
from drop_in_workflows import shared_state_app
from hosting import RunningHost

RUN = "/api/workflow/email_triage_shared_state/run"
SPAM = "URGENT! You have won $1,000,000! Click here now!"


host = module_host(shared_state_app)


def completed(host: RunningHost, started: Any) -> Any:
    return poll(host, path_of(started.json()["statusQueryGetUri"]), lambda r: r.json()["runtimeStatus"] == "Completed")


def test_09_a_plain_text_spam_email_is_marked_as_spam(host: RunningHost) -> None:
    started = host.request("POST", RUN, headers={"Content-Type": "text/plain"}, raw=SPAM.encode())
    status = completed(host, started)

    instance_id = started.json()["instanceId"]
    assert started.status == 202 and started.json()["message"] == "Workflow started"
    assert started.json()["respondUri"].endswith(
        f"/api/workflow/email_triage_shared_state/respond/{instance_id}/{{requestId}}"
    )
    assert status.json()["output"] == ["Email marked as spam: it says URGENT, won, Click here"]


def test_09_a_json_string_waited_for_answers_200_with_the_sent_email(host: RunningHost) -> None:
    email = "Could we move our meeting to Tuesday?"

    reply = host.request("POST", f"{RUN}?waitForResponse=true&timeoutSeconds=30", email)

    assert reply.status == 200
    assert reply.json() == {
        "instanceId": reply.json()["instanceId"],
        "runtimeStatus": "Completed",
        "output": [f"Email sent: [offline model] Reply to this email: {email}"],
    }


def test_09_a_run_id_names_the_run(host: RunningHost) -> None:
    started = host.request("POST", f"{RUN}?runId=email-001.retry:2", SPAM)
    status = completed(host, started)
    ours = host.request("GET", "/api/workflows/email_triage_shared_state/runs/email-001.retry:2")

    assert started.json()["instanceId"] == status.json()["instanceId"] == "email-001.retry:2"
    assert ours.json()["outputs"] == status.json()["output"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("runId=%40bad", "'runId' '@bad' is not 1-100 letters"),
        ("waitForResponse=maybe", "'waitForResponse' must be a boolean value."),
        ("waitForResponse=true&timeoutSeconds=201", "'timeoutSeconds' must be an integer between 1 and 200."),
    ],
)
def test_09_bad_run_parameters_are_400(host: RunningHost, query: str, message: str) -> None:
    reply = host.request("POST", f"{RUN}?{query}", SPAM)

    assert reply.status == 400 and message in reply.json()["error"]["message"]


def test_09_an_unknown_run_is_404(host: RunningHost) -> None:
    for run_id in ("no-such-run", "not%20a%20run%20id"):
        reply = host.request("GET", f"/api/workflow/email_triage_shared_state/status/{run_id}")
        assert (reply.status, reply.json()["error"]["code"]) == (404, "run_not_found")
