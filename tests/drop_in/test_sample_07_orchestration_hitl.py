"""Sample 07 (single-agent orchestration, human in the loop) of agent-framework-azurefunctions, as our own app
(`drop_in_orchestrations.hitl_app`): a structured draft, a person's approval raced against a durable timer, a
rewrite on rejection. Approve, reject then approve, time out, run out of attempts, and a host restart while the
orchestration waits; time moves only when the test moves it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import ManualClock
from drop_in_orchestrations import hitl_app
from local_host.driving import OrchestrationHost

TOPIC = "Contoso launch"
DRAFT = f"[offline model] Write a short article about '{TOPIC}'."


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def host(tmp_path: Path, clock: ManualClock) -> Iterator[OrchestrationHost]:
    running = OrchestrationHost(lambda: hitl_app(clock), tmp_path / "state", clock)
    yield running
    running.stop()


def start(host: OrchestrationHost, **request: Any) -> str:
    started = host.request("POST", "/api/hitl/run", {"topic": TOPIC, **request})
    assert started.status == 202 and started.json()["topic"] == TOPIC
    host.settle()
    return str(started.json()["instanceId"])


def status(host: OrchestrationHost, instance_id: str) -> dict[str, Any]:
    reply = host.request("GET", f"/api/hitl/status/{instance_id}")
    assert reply.status == 200, reply.body
    return reply.json()


def approve(host: OrchestrationHost, instance_id: str, approved: bool, feedback: str = "") -> None:
    reply = host.request("POST", f"/api/hitl/approve/{instance_id}", {"approved": approved, "feedback": feedback})
    assert reply.status == 200 and reply.json()["approved"] is approved
    host.settle()


def test_07_an_approved_draft_is_published(host: OrchestrationHost) -> None:
    instance_id = start(host)
    waiting = status(host, instance_id)

    approve(host, instance_id, True)

    done = status(host, instance_id)
    assert waiting["runtimeStatus"] == "Running"
    assert waiting["workflowStatus"] == "Requesting human feedback. Iteration #1. Timeout: 72.0 hour(s)."
    assert done["runtimeStatus"] == "Completed" and done["output"] == {"content": DRAFT}
    assert done["workflowStatus"].startswith("Content published successfully at 2023-11-14T22:13:")


def test_07_a_rejection_rewrites_with_the_feedback_then_an_approval_publishes(host: OrchestrationHost) -> None:
    instance_id = start(host)

    approve(host, instance_id, False, "Mention the date.")
    again = status(host, instance_id)
    approve(host, instance_id, True)

    rewrite = f"[offline model] Rewrite the article about '{TOPIC}'. Human Feedback: Mention the date."
    assert again["runtimeStatus"] == "Running"
    assert again["workflowStatus"] == "Requesting human feedback. Iteration #2. Timeout: 72.0 hour(s)."
    assert status(host, instance_id)["output"] == {"content": rewrite}


def test_07_no_answer_within_the_timeout_fails_the_orchestration(host: OrchestrationHost) -> None:
    instance_id = start(host, approval_timeout_hours=2)

    host.advance(2 * 3600)

    record = status(host, instance_id)
    assert record["runtimeStatus"] == "Failed"
    assert record["workflowStatus"] == "Human approval timed out after 2.0 hour(s). Treating as rejection."
    assert "Human approval timed out after 2.0 hour(s)." in str(record["output"])


def test_07_rejections_past_the_attempts_fail_the_orchestration(host: OrchestrationHost) -> None:
    instance_id = start(host, max_review_attempts=1)

    approve(host, instance_id, False, "No.")

    record = status(host, instance_id)
    assert record["runtimeStatus"] == "Failed"
    assert record["workflowStatus"] == "Max review attempts exhausted."
    assert "Content could not be approved after 1 iteration(s)." in str(record["output"])


def test_07_an_approval_after_a_host_restart_during_the_wait_publishes(host: OrchestrationHost) -> None:
    instance_id = start(host)

    host.restart()
    approve(host, instance_id, True)

    assert status(host, instance_id)["output"] == {"content": DRAFT}


def test_07_bad_requests_are_400_and_an_unknown_instance_404(host: OrchestrationHost) -> None:
    no_topic = host.request("POST", "/api/hitl/run", {"max_review_attempts": 2})
    no_decision = host.request("POST", "/api/hitl/approve/some-id", {"feedback": "fine"})
    unknown = host.request("GET", "/api/hitl/status/no-such-instance")

    assert (no_topic.status, no_decision.status) == (400, 400)
    assert "topic" in no_topic.json()["error"] and "approved" in no_decision.json()["error"]
    assert (unknown.status, unknown.json()) == (404, {"error": "Instance not found."})
