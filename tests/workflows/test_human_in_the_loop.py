"""Human input over HTTP: `request_info` with a `response_handler`, tool approvals in an agent node, requests inside
a sub-workflow, restarts while waiting, and the published host's routes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hitl_apps import approval_app
from hosting import Reply, RunningHost


@pytest.fixture
def host(tmp_path: Path) -> Any:
    running = RunningHost(approval_app, tmp_path)
    yield running
    running.stop()


def wait_for(host: RunningHost, path: str, status: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = host.request("GET", path).json()
        if body.get("status") == status or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def start(host: RunningHost, workflow: str, value: Any) -> Reply:
    return host.request("POST", f"/api/workflows/{workflow}/runs", {"input": value, "timeoutSeconds": 30})


def test_a_request_info_survives_a_restart_and_its_answer_reaches_the_response_handler(host: RunningHost) -> None:
    started = start(host, "review", "Write a tagline.")
    body = started.json()
    run = f"/api/workflows/review/runs/{body['runId']}"
    (request,) = body["pendingRequests"]

    host.restart()
    waiting = host.request("GET", run).json()
    answered = host.request("POST", f"{run}/responses/{request['requestId']}", {"response": True})
    done = wait_for(host, run, "completed")

    assert started.status == 202 and started.headers["location"].endswith(run)
    assert body["status"] == "waiting_for_input"
    assert request["executorId"] == "gate"
    assert request["data"] == {"draft": "Re: Write a tagline. (I saw 1 messages)"}
    assert waiting["status"] == "waiting_for_input" and waiting["pendingRequests"] == [request]
    assert answered.status == 202 and answered.json()["status"] == "accepted"
    assert done["outputs"] == ["published: Re: Write a tagline. (I saw 1 messages)"]
    assert done["pendingRequests"] == [] and done["error"] is None


def test_an_answered_request_is_409_an_unknown_one_404_and_a_wrong_type_400(host: RunningHost) -> None:
    body = start(host, "review", "Write a tagline.").json()
    run = f"/api/workflows/review/runs/{body['runId']}"
    request_id = body["pendingRequests"][0]["requestId"]

    wrong = host.request("POST", f"{run}/responses/{request_id}", {"response": {"approved": "maybe"}})
    unknown = host.request("POST", f"{run}/responses/no-such-request", {"response": True})
    host.request("POST", f"{run}/responses/{request_id}", {"response": False})
    done = wait_for(host, run, "completed")
    again = host.request("POST", f"{run}/responses/{request_id}", {"response": True})

    assert (wrong.status, wrong.json()["error"]["code"]) == (400, "invalid_response")
    assert (unknown.status, unknown.json()["error"]["code"]) == (404, "request_not_found")
    assert done["outputs"] == ["rejected: Re: Write a tagline. (I saw 1 messages)"]
    assert (again.status, again.json()["error"]["code"]) == (409, "request_already_answered")


def test_a_tool_that_needs_approval_waits_as_a_pending_request_and_runs_when_approved(host: RunningHost) -> None:
    body = start(host, "cleanup", "call delete_file path=/tmp/old.log").json()
    run = f"/api/workflows/cleanup/runs/{body['runId']}"
    (request,) = body["pendingRequests"]

    host.restart()
    host.request("POST", f"{run}/responses/{request['requestId']}", {"response": {"approved": True}})
    done = wait_for(host, run, "completed")

    assert body["status"] == "waiting_for_input"
    assert request["executorId"] == "janitor"
    assert request["data"]["type"] == "function_approval_request"
    assert request["data"]["function_call"]["name"] == "delete_file"
    (output,) = done["outputs"]
    assert output["messages"][-1]["contents"][0]["text"] == "The tools said: deleted /tmp/old.log"


def test_a_request_inside_a_sub_workflow_reaches_the_caller_and_its_answer_the_sub_workflow(host: RunningHost) -> None:
    body = start(host, "outer", "Write a motto.").json()
    run = f"/api/workflows/outer/runs/{body['runId']}"
    (request,) = body["pendingRequests"]

    answered = host.request("POST", f"{run}/responses/{request['requestId']}", {"response": True})
    done = wait_for(host, run, "completed")

    assert body["status"] == "waiting_for_input"
    assert request["requestId"].startswith("review_step~0~")
    assert request["data"] == {"draft": "Re: Write a motto. (I saw 1 messages)"}
    assert answered.status == 202
    assert done["outputs"] == ["published: Re: Write a motto. (I saw 1 messages)"]


def test_the_published_hosts_routes_start_report_and_answer_in_its_shapes(host: RunningHost) -> None:
    started = host.request(
        "POST", "/api/workflow/review/run", raw=b"Write a tagline.", headers={"Content-Type": "text/plain"}
    )
    instance = started.json()["instanceId"]
    status_path = f"/api/workflow/review/status/{instance}"
    deadline = time.monotonic() + 30
    status = host.request("GET", status_path).json()
    while "pendingHumanInputRequests" not in status and time.monotonic() < deadline:
        time.sleep(0.05)
        status = host.request("GET", status_path).json()
    (pending,) = status["pendingHumanInputRequests"]

    responded = host.request("POST", f"/api/workflow/review/respond/{instance}/{pending['requestId']}", True)
    while status["runtimeStatus"] != "Completed" and time.monotonic() < deadline:
        time.sleep(0.05)
        status = host.request("GET", status_path).json()

    assert started.status == 202
    assert started.json()["statusQueryGetUri"].endswith(status_path)
    assert started.json()["message"] == "Workflow started"
    assert pending["sourceExecutor"] == "gate"
    assert pending["requestData"] == {"draft": "Re: Write a tagline. (I saw 1 messages)"}
    assert pending["respondUrl"].endswith(f"/api/workflow/review/respond/{instance}/{pending['requestId']}")
    assert responded.status == 200 and responded.json()["message"] == "Response delivered successfully"
    assert status["output"] == ["published: Re: Write a tagline. (I saw 1 messages)"]


DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than Python's recursion limit: json.loads raises RecursionError


def test_json_nested_past_the_parsers_depth_is_invalid_json_on_every_workflow_route(host: RunningHost) -> None:
    body = start(host, "review", "Write a tagline.").json()
    run = f"/api/workflows/review/runs/{body['runId']}"
    request_id = body["pendingRequests"][0]["requestId"]
    json_type = {"Content-Type": "application/json"}
    paths = [
        "/api/workflows/review/runs",
        f"{run}/responses/{request_id}",
        "/api/workflow/review/run",
        f"/api/workflow/review/respond/{body['runId']}/{request_id}",
    ]

    replies = [host.request("POST", path, raw=DEEP, headers=json_type) for path in paths]
    waiting = host.request("GET", run).json()

    assert [(reply.status, reply.json()["error"]["code"]) for reply in replies] == [(400, "invalid_json")] * 4
    assert all("not valid JSON" in reply.json()["error"]["message"] for reply in replies)
    assert waiting["status"] == "waiting_for_input" and waiting["pendingRequests"] == body["pendingRequests"]
