"""Sample 12 (workflow human in the loop) of agent-framework-azurefunctions, as our own app
(`drop_in_workflows.hitl_app`): an agent analyses a submission, an executor asks a person to approve it, and a notify
executor builds the respond URL with `WorkflowHitlContext`. The status lists the pending request with the same URL;
answering it there approves or rejects, also after a host restart while the run waits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from drop_in_hosts import path_of, poll
from drop_in_workflows import NOTIFIED_URLS, hitl_app
from hosting import RunningHost

from agent_host import WorkflowHitlContext
from agent_host._workflows.hitl_context import route_prefix

SUBMISSION = {"content_id": "c-1", "title": "Balcony gardens", "body": "Grow herbs in pots.", "author": "Ada"}
STATUS = "/api/workflow/content_moderation/status"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningHost]:
    # The respond URL is built from WEBSITE_HOSTNAME, as on Azure; host.json has no route prefix here.
    monkeypatch.setenv("AzureWebJobsScriptRoot", str(tmp_path))
    route_prefix.cache_clear()
    running = RunningHost(hitl_app, tmp_path / "state")
    assert running.host is not None
    monkeypatch.setenv("WEBSITE_HOSTNAME", urlsplit(running.host.base_url).netloc)
    NOTIFIED_URLS.clear()
    yield running
    running.stop()
    route_prefix.cache_clear()


def waiting(host: RunningHost, submission: dict[str, Any] = SUBMISSION) -> tuple[str, dict[str, Any]]:
    """Start a run and return its id and its pending request, once the run waits for nothing else (the notify
    executor runs in the superstep after the request is made)."""
    started = host.request("POST", "/api/workflow/content_moderation/run", submission)
    instance_id = started.json()["instanceId"]
    status = poll(
        host, f"{STATUS}/{instance_id}", lambda r: (r.json()["customStatus"] or {}).get("status") == "waiting_for_input"
    )
    assert status.json()["runtimeStatus"] in ("Running", "Pending")
    (pending,) = status.json()["pendingHumanInputRequests"]
    return instance_id, pending


def answered(host: RunningHost, instance_id: str, url: str, response: dict[str, Any]) -> Any:
    reply = host.request("POST", path_of(url), response)
    assert reply.status == 200, reply.body
    assert reply.json() == {
        "message": "Response delivered successfully",
        "instanceId": instance_id,
        "requestId": url.rsplit("/", 1)[1],
    }
    return poll(host, f"{STATUS}/{instance_id}", lambda r: r.json()["runtimeStatus"] == "Completed")


def test_12_the_pending_request_is_listed_with_the_url_the_executor_built(host: RunningHost) -> None:
    assert host.host is not None
    instance_id, pending = waiting(host)

    base = host.host.base_url
    expected = WorkflowHitlContext(instance_id=instance_id, workflow_name="content_moderation", base_url_override=base)
    assert uuid.UUID(pending["requestId"])
    assert pending["sourceExecutor"] == "human_review_executor"
    assert pending["requestData"]["content_id"] == "c-1" and pending["requestData"]["author"] == "Ada"
    assert pending["respondUrl"] == expected.build_respond_url(pending["requestId"])
    # The notify executor found the run through from_context and the request id through pending_request_id.
    assert [pending["respondUrl"]] == NOTIFIED_URLS


def test_12_an_approval_at_the_respond_url_publishes(host: RunningHost) -> None:
    instance_id, pending = waiting(host)

    status = answered(host, instance_id, pending["respondUrl"], {"approved": True, "reviewer_notes": "Lovely."})

    assert status.json()["output"] == ["✅ Content 'c-1' has been APPROVED and published.\nReviewer notes: Lovely."]


def test_12_a_rejection_is_the_runs_output(host: RunningHost) -> None:
    instance_id, pending = waiting(host)

    status = answered(host, instance_id, pending["respondUrl"], {"approved": False})

    assert status.json()["output"] == ["❌ Content 'c-1' has been REJECTED.\nReviewer notes: None"]


def test_12_an_answer_after_a_restart_while_waiting_completes_the_run(host: RunningHost) -> None:
    instance_id, pending = waiting(host)

    host.restart()
    status = answered(host, instance_id, pending["respondUrl"], {"approved": True, "reviewer_notes": "After restart."})

    assert "Reviewer notes: After restart." in status.json()["output"][0]


def test_12_a_second_answer_is_409_and_an_unknown_request_404(host: RunningHost) -> None:
    instance_id, pending = waiting(host)
    answered(host, instance_id, pending["respondUrl"], {"approved": True})

    again = host.request("POST", path_of(pending["respondUrl"]), {"approved": False})
    unknown = host.request("POST", f"/api/workflow/content_moderation/respond/{instance_id}/nope", {"approved": False})

    assert (again.status, again.json()["error"]["code"]) == (409, "request_already_answered")
    assert (unknown.status, unknown.json()["error"]["code"]) == (404, "request_not_found")
