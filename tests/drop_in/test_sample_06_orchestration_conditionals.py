"""Sample 06 (multi-agent orchestration, conditionals) of agent-framework-azurefunctions, as our own app
(`drop_in_orchestrations.conditionals_app`): a spam verdict as structured output (`response_format` a pydantic
model, `.value` read in the orchestration) decides which activity runs."""

from __future__ import annotations

from typing import Any

from drop_in_hosts import module_host, path_of, poll
from drop_in_orchestrations import conditionals_app
from hosting import RunningHost

host = module_host(conditionals_app)


def finished(host: RunningHost, email: dict[str, Any]) -> Any:
    started = host.request("POST", "/api/spamdetection/run", email)
    assert started.status == 202 and started.json()["emailId"] == email["email_id"]
    done = {"Completed", "Failed"}
    return poll(host, path_of(started.json()["statusQueryGetUri"]), lambda r: r.json()["runtimeStatus"] in done)


def test_06_a_spam_email_is_marked_as_spam_with_the_agents_reason(host: RunningHost) -> None:
    email = {"email_id": "e-1", "email_content": "URGENT! You have won $1,000,000! Click here now!"}

    status = finished(host, email)

    assert status.json()["runtimeStatus"] == "Completed"
    assert status.json()["output"] == "Email marked as spam: it says URGENT, won, Click here"


def test_06_a_legitimate_email_gets_the_assistants_structured_reply_sent(host: RunningHost) -> None:
    email = {"email_id": "e-2", "email_content": "Can we move our meeting to Tuesday?"}

    status = finished(host, email)

    assert status.json()["output"] == (
        "Email sent: [offline model] Write a reply to: Can we move our meeting to Tuesday?"
    )


def test_06_an_invalid_payload_is_400(host: RunningHost) -> None:
    reply = host.request("POST", "/api/spamdetection/run", {"email_id": "e-3"})

    assert reply.status == 400 and reply.json()["error"].startswith("Invalid email payload")
