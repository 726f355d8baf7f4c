"""The client contract: the real `DurableOrchestrationClient` against the local host's webhook API, and the management
URLs it hands out, which must answer (status, send event, terminate, purge) and carry the function key."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from azure.durable_functions import OrchestrationRuntimeStatus
from clocks import EPOCH_MS, ManualClock
from hosting import Reply

from .driving import OrchestrationHost
from .orchestration_apps import build_orchestration_app

WEBHOOK = "/runtime/webhooks/durabletask"
JSON_TYPE = {"Content-Type": "application/json"}
DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than Python's recursion limit: json.loads raises RecursionError
STARTED = datetime.fromtimestamp(EPOCH_MS / 1000, tz=UTC)


def path_of(url: str) -> str:
    """The path and query of an absolute URL (the tests' HTTP helper takes those)."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def test_status_fields_through_the_client(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "fields", {"requester": "ada"})
    client = orchestrations.client()

    running = orchestrations.call(client.get_status(instance_id))
    orchestrations.clock.advance(2)
    orchestrations.raise_event(instance_id, "decision", "approve")
    done = orchestrations.call(client.get_status(instance_id))

    assert running.runtime_status is OrchestrationRuntimeStatus.Running
    assert (running.name, running.instance_id) == ("approval", "fields")
    assert running.input_ == '{"requester": "ada"}'  # the input's JSON text, as the extension returns it
    assert running.custom_status == {"stage": "waiting for approval"}
    assert running.output is None
    assert running.created_time == running.last_updated_time == STARTED
    assert done.runtime_status is OrchestrationRuntimeStatus.Completed
    assert done.output == {"decision": '"approve"', "timedOut": False}
    assert done.custom_status == {"stage": "waiting for approval"}
    assert done.created_time == STARTED
    assert done.last_updated_time == STARTED + timedelta(seconds=2)


def test_status_with_history_and_input_options(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("sequence", "with-history", ["Oslo"])
    client = orchestrations.client()

    bare = orchestrations.call(client.get_status(instance_id, show_history=True, show_input=False))
    full = orchestrations.call(client.get_status(instance_id, show_history=True, show_history_output=True))
    hidden = orchestrations.request("GET", f"{WEBHOOK}/instances/{instance_id}?showInput=false")

    # The extension names the list historyEvents; SDK 1.7 keeps it as that attribute and leaves `history` None.
    assert bare.history is None
    kinds = [event["EventType"] for event in bare.historyEvents]
    assert kinds == ["ExecutionStarted", "TaskScheduled", "TaskCompleted", "ExecutionCompleted"]
    assert "Result" not in bare.historyEvents[2]
    assert full.historyEvents[2]["Result"] == '"Hello Oslo!"'
    # SDK 1.7 sends showInput only when true, and the extension's default is true: show_input=False shows it anyway,
    # here as on Azure. The parameter itself works.
    assert bare.input_ == full.input_ == '["Oslo"]'
    assert hidden.json()["input"] is None


def test_unknown_instances(orchestrations: OrchestrationHost) -> None:
    client = orchestrations.client()

    status = orchestrations.call(client.get_status("nobody"))
    assert not status  # the SDK's falsy status for an instance that does not exist
    with pytest.raises(Exception, match="No instance with ID nobody found"):
        orchestrations.call(client.raise_event("nobody", "decision", "x"))
    with pytest.raises(Exception, match="No instance with ID 'nobody' found"):
        orchestrations.call(client.terminate("nobody", "why"))
    assert orchestrations.call(client.purge_instance_history("nobody")).instances_deleted == 0


def test_start_new_refuses_a_name_that_is_not_an_orchestrator(orchestrations: OrchestrationHost) -> None:
    client = orchestrations.client()

    with pytest.raises(
        Exception, match=r"The function 'nope' doesn't exist, is disabled, or is not an orchestrator"
    ) as e:
        orchestrations.call(client.start_new("nope"))
    assert "The app's orchestrator functions: approval, changing_code, chatty_status, child," in str(e.value)
    with pytest.raises(Exception, match="It is an activity function: start an orchestrator that calls it"):
        orchestrations.call(client.start_new("greet"))
    assert orchestrations.call(client.get_status_all()) == []  # nothing was queued


def test_start_new_refuses_bad_instance_ids(orchestrations: OrchestrationHost) -> None:
    client = orchestrations.client()

    with pytest.raises(Exception, match="Instance ids may not start with '@'"):
        orchestrations.call(client.start_new("sequence", "@entity", []))
    hashed = orchestrations.request("POST", f"{WEBHOOK}/orchestrators/sequence/a%23b", [])  # the SDK would cut at #
    assert (hashed.status, hashed.json()["error"]["code"]) == (400, "invalid_instance_id")
    assert "may not contain '/', '\\', '#', '?' or control characters" in hashed.json()["ExceptionMessage"]
    steps = [orchestrations.request("POST", f"{WEBHOOK}/orchestrators/sequence/{step}", []) for step in (".", "..")]
    assert [(reply.status, reply.json()["error"]["code"]) for reply in steps] == [(400, "invalid_instance_id")] * 2
    assert "'..' is a URL path step" in steps[1].json()["ExceptionMessage"]
    assert orchestrations.call(client.get_status_all()) == []


def test_list_filter_and_purge(orchestrations: OrchestrationHost) -> None:
    client = orchestrations.client()
    orchestrations.start_new("sequence", "batch-1", ["A"])
    orchestrations.clock.advance(60)
    orchestrations.start_new("sequence", "batch-2", ["B"])
    orchestrations.start_new("approval", "other-1")

    every = orchestrations.call(client.get_status_all())
    running = orchestrations.call(client.get_status_by(runtime_status=[OrchestrationRuntimeStatus.Running]))
    prefixed = orchestrations.call(client.get_status_by(instance_id_prefix="batch-"))
    late = orchestrations.call(client.get_status_by(created_time_from=STARTED + timedelta(seconds=30)))

    assert [s.instance_id for s in every] == ["batch-1", "batch-2", "other-1"]
    assert [s.instance_id for s in running] == ["other-1"]
    assert [s.instance_id for s in prefixed] == ["batch-1", "batch-2"]
    assert [s.instance_id for s in late] == ["batch-2", "other-1"]

    with pytest.raises(Exception, match="unexpected status code 412"):  # still running
        orchestrations.call(client.purge_instance_history("other-1"))
    assert orchestrations.call(client.purge_instance_history("batch-1")).instances_deleted == 1
    assert not orchestrations.call(client.get_status("batch-1"))
    assert orchestrations.history("batch-1") == []
    purged = orchestrations.call(client.purge_instance_history_by(created_time_from=STARTED))
    assert purged.instances_deleted == 1  # batch-2; other-1 is still running
    assert [s.instance_id for s in orchestrations.call(client.get_status_all())] == ["other-1"]


def test_status_pages_carry_a_continuation_token(orchestrations: OrchestrationHost) -> None:
    for number in range(3):
        orchestrations.start_new("sequence", f"page-{number}", [])

    first = orchestrations.request("GET", f"{WEBHOOK}/instances?top=2")
    token = first.headers["x-ms-continuation-token"]
    second = orchestrations.request("GET", f"{WEBHOOK}/instances?top=2", headers={"x-ms-continuation-token": token})

    assert [s["instanceId"] for s in first.json()] == ["page-0", "page-1"]
    assert [s["instanceId"] for s in second.json()] == ["page-2"]
    assert "x-ms-continuation-token" not in second.headers


def test_status_codes_of_the_status_route(orchestrations: OrchestrationHost) -> None:
    orchestrations.start_new("approval", "waiting")
    orchestrations.start_new("failure_uncaught", "broken")
    orchestrations.start_new("sequence", "finished", [])

    waiting = orchestrations.request("GET", f"{WEBHOOK}/instances/waiting")
    broken = orchestrations.request("GET", f"{WEBHOOK}/instances/broken")
    broken_500 = orchestrations.request("GET", f"{WEBHOOK}/instances/broken?returnInternalServerErrorOnFailure=true")
    finished = orchestrations.request("GET", f"{WEBHOOK}/instances/finished")
    missing = orchestrations.request("GET", f"{WEBHOOK}/instances/missing")

    assert (waiting.status, waiting.headers["retry-after"]) == (202, "5")
    assert waiting.headers["location"].endswith(f"{WEBHOOK}/instances/waiting")
    assert (broken.status, broken.json()["runtimeStatus"]) == (200, "Failed")
    assert broken.json()["output"].startswith("Orchestrator function 'failure_uncaught' failed: Activity function")
    assert broken_500.status == 500
    assert (finished.status, finished.json()["output"]) == (200, [])
    assert (missing.status, missing.json()["error"]["code"]) == (404, "instance_not_found")


def test_operations_the_local_host_does_not_serve_answer_501(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "suspended")
    client = orchestrations.client()

    with pytest.raises(Exception, match="unexpected status code 501"):
        orchestrations.call(client.suspend(instance_id, "pause"))
    reply = orchestrations.request("POST", f"{WEBHOOK}/instances/{instance_id}/rewind?reason=x")
    assert (reply.status, reply.json()["error"]["code"]) == (501, "not_supported")


def test_check_status_response_urls_answer(orchestrations: OrchestrationHost) -> None:
    started = orchestrations.request("POST", "/api/start/approval?id=urls")
    orchestrations.settle()
    payload = started.json()

    assert started.status == 202
    assert started.headers["location"] == payload["statusQueryGetUri"]
    assert set(payload) == {"id", "statusQueryGetUri", "sendEventPostUri", "terminatePostUri", "purgeHistoryDeleteUri"}
    status = orchestrations.request("GET", path_of(payload["statusQueryGetUri"]))
    assert (status.status, status.json()["runtimeStatus"]) == (202, "Running")
    send = path_of(payload["sendEventPostUri"].replace("{eventName}", "decision"))
    assert orchestrations.request("POST", send, "by url").status == 202
    orchestrations.settle()
    assert orchestrations.output("urls") == {"decision": "by url", "timedOut": False}
    purge = orchestrations.request("DELETE", path_of(payload["purgeHistoryDeleteUri"]))
    assert (purge.status, purge.json()) == (200, {"instancesDeleted": 1})


def test_terminate_url_answers(orchestrations: OrchestrationHost) -> None:
    payload = orchestrations.request("POST", "/api/start/approval?id=stop-me").json()
    orchestrations.settle()

    reply = orchestrations.request("POST", path_of(payload["terminatePostUri"].replace("{text}", "enough")))
    orchestrations.settle()

    assert reply.status == 202
    assert (orchestrations.instance("stop-me").status, orchestrations.output("stop-me")) == ("Terminated", "enough")
    again = orchestrations.request("POST", path_of(payload["terminatePostUri"].replace("{text}", "again")))
    assert (again.status, again.json()["error"]["code"]) == (410, "instance_finished")


def test_wait_for_completion_returns_the_output_or_the_urls(orchestrations: OrchestrationHost) -> None:
    done = orchestrations.request("POST", "/api/start/sequence?id=quick&waitMs=5000", ["Rome"])
    pending = orchestrations.request("POST", "/api/start/approval?id=slow&waitMs=200")

    assert (done.status, done.json()) == (200, ["Hello Rome!"])
    assert pending.status == 202
    assert pending.json()["id"] == "slow"


def test_raise_event_needs_json(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "typed")

    text = orchestrations.request(
        "POST",
        f"{WEBHOOK}/instances/{instance_id}/raiseEvent/decision",
        raw=b"yes",
        headers={"Content-Type": "text/plain"},
    )
    broken = orchestrations.request(
        "POST",
        f"{WEBHOOK}/instances/{instance_id}/raiseEvent/decision",
        raw=b"{oops",
        headers={"Content-Type": "application/json"},
    )

    deep = orchestrations.request(
        "POST", f"{WEBHOOK}/instances/{instance_id}/raiseEvent/decision", raw=DEEP, headers=JSON_TYPE
    )

    assert (text.status, text.json()["error"]["code"]) == (400, "unsupported_content_type")
    assert (broken.status, broken.json()["error"]["code"]) == (400, "invalid_json")
    assert (deep.status, deep.json()["error"]["code"]) == (400, "invalid_json")
    assert orchestrations.instance(instance_id).status == "Running"


def test_an_orchestration_input_nested_past_the_parsers_depth_is_invalid_json(
    orchestrations: OrchestrationHost,
) -> None:
    reply = orchestrations.request("POST", f"{WEBHOOK}/orchestrators/sequence/deep", raw=DEEP, headers=JSON_TYPE)

    assert (reply.status, reply.json()["error"]["code"]) == (400, "invalid_json")
    assert orchestrations.call(orchestrations.client().get_status_all()) == []


def _keyed_host(tmp_path: Path) -> OrchestrationHost:
    clock = ManualClock()
    return OrchestrationHost(lambda: build_orchestration_app(clock), tmp_path, clock, function_key="s3cret")


def test_management_urls_carry_the_function_key_and_need_it(tmp_path: Path) -> None:
    running = _keyed_host(tmp_path)
    try:
        started = running.request("POST", "/api/start/sequence?id=keyed&code=s3cret", ["Lima"])
        running.settle()
        status_url = path_of(started.json()["statusQueryGetUri"])
        binding = json.loads(running.local.durable_client_binding())

        with_key = running.request("GET", status_url)
        without_key = running.request("GET", status_url.replace("&code=s3cret", ""))
        webhook_start: Reply = running.request("POST", f"{WEBHOOK}/orchestrators/sequence", ["x"])

        assert "code=s3cret" in status_url
        assert binding["managementUrls"]["statusQueryGetUri"].endswith(
            f"{WEBHOOK}/instances/INSTANCEID?taskHub=LocalHub&connection=Storage&code=s3cret"
        )
        assert binding["rpcBaseUrl"].startswith("http://127.0.0.1:") and "code=" not in binding["rpcBaseUrl"]
        assert (with_key.status, with_key.json()["output"]) == (200, ["Hello Lima!"])
        assert (without_key.status, without_key.json()["error"]["code"]) == (401, "unauthorized")
        assert webhook_start.status == 401
        assert [s.instance_id for s in running.call(running.client().get_status_all())] == ["keyed"]
    finally:
        running.stop()


def test_webhook_routes_answer_wrong_methods_and_paths_with_json(orchestrations: OrchestrationHost) -> None:
    get_start = orchestrations.request("GET", f"{WEBHOOK}/orchestrators/sequence")
    put_instance = orchestrations.request("PUT", f"{WEBHOOK}/instances/anything")
    unknown = orchestrations.request("POST", f"{WEBHOOK}/instances/anything/explode")

    assert (get_start.status, get_start.headers["allow"], get_start.json()["error"]["code"]) == (
        405,
        "POST",
        "method_not_allowed",
    )
    assert (put_instance.status, put_instance.headers["allow"]) == (405, "GET, DELETE")
    assert (unknown.status, unknown.json()["error"]["code"]) == (404, "not_found")
