"""Hosted workflows as MCP tools, driven through the local host with the official MCP SDK client.

A call starts a run (or reads one by runId, answering a pending request), waits for it, and returns its outputs, the
requests it waits for with the exact call that answers each, or its failure. Runs are the HTTP API's runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import pytest
from agent_framework import WorkflowBuilder
from apps import make_agent
from hosting import RunningHost
from mcp import ClientSession
from mcp.types import CallToolResult
from mcp_harness import call_tool, with_session
from tool_results import AGENT_SCHEMA, texts
from workflow_apps import EXECUTIONS, Shout, Slow, workflow_tool_app

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient

RUNS = "/api/workflows/{workflow}/runs"
RUN_PROPERTIES = {
    "runId": {
        "type": "string",
        "description": "Instead of input: the run to read, or to answer, the runId an earlier call returned. The call "
        "waits for the run and returns its outputs, or the requests it waits for.",
    },
    "requestId": {
        "type": "string",
        "description": "With runId: the pending request to answer (a requestId from the run's pendingRequests). Send "
        "the answer as response.",
    },
    "response": {
        "type": "string",
        "description": 'With runId and requestId: the answer to that request, as JSON (true, 3, "text", '
        '{"approved": true}); text that is not JSON is sent as text.',
    },
    "idempotencyKey": {
        "type": "string",
        "description": "Optional, with input: a unique key for this call (a UUID works). Calling again with the same "
        "key and input returns the run the first call started instead of starting another; reuse it only to retry "
        "this call.",
    },
}
START_OR_READ = "Send it to start a run; leave it out when you send runId."
ORDER_SCHEMA = (
    '{"description":"A structured input: what to order and how many.","properties":{"item":{"type":"string"},'
    '"quantity":{"type":"integer"}},"required":["item","quantity"],"type":"object"}'
)

Start = Callable[..., RunningHost]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Start the local host for the workflow-tool app (with these settings); stopped afterwards."""
    started: list[RunningHost] = []

    def run(settings: HostSettings | None = None) -> RunningHost:
        running = RunningHost(lambda: workflow_tool_app(settings), tmp_path / f"host{len(started)}")
        started.append(running)
        return running

    yield run
    for running in started:
        running.stop()


@pytest.fixture
def host(start: Start) -> RunningHost:
    return start()


def http_run(running: RunningHost, workflow: str, run_id: str) -> dict[str, Any]:
    """The run as `GET /api/workflows/{workflow}/runs/{runId}` shows it."""
    reply = running.request("GET", f"{RUNS.format(workflow=workflow)}/{run_id}")
    assert reply.status == 200, reply.body
    return reply.json()


def test_tools_list_shows_agent_and_workflow_tools_with_their_schemas(host: RunningHost) -> None:
    listed = with_session(host, lambda session: session.list_tools())

    tools = {tool.name: tool for tool in listed.tools}
    # Workflows are registered before agents, as agent-framework-azurefunctions registers them.
    assert list(tools) == ["shout", "order", "approve", "comment", "cleanup", "broken", "slow", "assistant"]
    assert tools["assistant"].input_schema == AGENT_SCHEMA
    assert tools["shout"].description == "Shouts the text back."
    assert tools["order"].description == (
        "Run the order workflow: send input to start a run, or runId to read a run or answer a request it waits for."
    )
    assert tools["shout"].input_schema == {
        "type": "object",
        "properties": {
            "input": {"type": "string", "description": f"The text that starts a run of shout. {START_OR_READ}"},
            **RUN_PROPERTIES,
        },
        "required": [],
    }
    assert tools["order"].input_schema["properties"]["input"] == {
        "type": "object",
        "description": f"A JSON object that starts a run of order, of schema {ORDER_SCHEMA}. {START_OR_READ}",
    }
    assert list(tools["order"].input_schema["properties"]) == ["input", *RUN_PROPERTIES]


def test_a_workflow_tool_call_runs_to_completion_and_returns_its_outputs(host: RunningHost) -> None:
    result = call_tool(host, "shout", {"input": "hello there"})

    run_id = result.structured_content["runId"]
    assert result.is_error is False
    assert texts(result) == [
        "HELLO THERE",
        f'Run {run_id} of workflow shout completed with 1 output(s) (to read it again, call shout with {{"runId": '
        f'"{run_id}"}}).',
    ]
    assert result.structured_content == {
        "runId": run_id,
        "workflow": "shout",
        "status": "completed",
        "outputs": ["HELLO THERE"],
        "pendingRequests": [],
        "error": None,
    }
    # The same run the HTTP API serves.
    assert http_run(host, "shout", run_id) == result.structured_content


def test_a_structured_input_is_sent_as_a_json_object_or_as_json_text(host: RunningHost) -> None:
    as_object = call_tool(host, "order", {"input": {"item": "tea", "quantity": 2}})
    as_text = call_tool(host, "order", {"input": '{"item": "scones", "quantity": 6}'})

    assert as_object.structured_content["outputs"] == ["2 x tea", {"item": "tea", "quantity": 2}]
    assert texts(as_object)[:2] == ["2 x tea", '{"item": "tea", "quantity": 2}']
    assert as_text.structured_content["outputs"] == ["6 x scones", {"item": "scones", "quantity": 6}]


def test_a_run_waiting_for_human_input_says_so_and_an_answer_call_returns_its_outputs(host: RunningHost) -> None:
    waiting = call_tool(host, "approve", {"input": "We launch on Monday."})
    run_id = waiting.structured_content["runId"]
    (request,) = waiting.structured_content["pendingRequests"]
    request_id = request["requestId"]

    host.restart()  # the run waits durably: nothing of it lives in the process
    answered = call_tool(host, "approve", {"runId": run_id, "requestId": request_id, "response": "true"})
    read_again = call_tool(host, "approve", {"runId": run_id})

    assert waiting.is_error is False
    assert waiting.structured_content["status"] == "waiting_for_input"
    assert request == {"requestId": request_id, "executorId": "approve", "data": {"draft": "We launch on Monday."}}
    assert texts(waiting) == [
        f"Run {run_id} of workflow approve waits for human input: 1 pending request(s). Ask for each answer, then "
        "call approve with runId, requestId and response; that call waits for the run again and returns its outputs "
        f"or its next requests. Over HTTP: POST /api/workflows/approve/runs/{run_id}/responses/{{requestId}} with "
        '{"response": ...}.',
        f'Request {request_id} from executor approve asks: {{"draft": "We launch on Monday."}}. It expects true or '
        f'false. Answer: call approve with {{"runId": "{run_id}", "requestId": "{request_id}", "response": true}}.',
    ]
    assert answered.is_error is False
    assert texts(answered)[:2] == [f"Answered request {request_id} of run {run_id}.", "published: We launch on Monday."]
    assert answered.structured_content["status"] == "completed"
    assert answered.structured_content["outputs"] == ["published: We launch on Monday."]
    assert read_again.structured_content == answered.structured_content == http_run(host, "approve", run_id)


def test_a_request_that_expects_text_takes_the_response_as_text_even_when_it_reads_as_json(host: RunningHost) -> None:
    waiting = call_tool(host, "comment", {"input": "Draft F"})
    run_id = waiting.structured_content["runId"]
    request_id = waiting.structured_content["pendingRequests"][0]["requestId"]

    answered = call_tool(host, "comment", {"runId": run_id, "requestId": request_id, "response": "42"})

    assert "It expects text." in texts(waiting)[1]
    assert answered.structured_content["outputs"] == ["Draft F -- '42'"]


def test_a_tool_approval_in_an_agent_node_is_answered_with_approved_through_the_tool(host: RunningHost) -> None:
    waiting = call_tool(host, "cleanup", {"input": "call delete_file path=/tmp/old.log"})
    run_id = waiting.structured_content["runId"]
    (request,) = waiting.structured_content["pendingRequests"]

    approved = call_tool(
        host, "cleanup", {"runId": run_id, "requestId": request["requestId"], "response": {"approved": True}}
    )

    assert request["data"]["type"] == "function_approval_request"
    assert (
        f'asks for approval to call delete_file({{"path": "/tmp/old.log"}}). It expects {{"approved": true}} to let '
        f'the agent call it, or {{"approved": false}} to refuse. Answer: call cleanup with {{"runId": "{run_id}", '
        f'"requestId": "{request["requestId"]}", "response": {{"approved": true}}}}.'
    ) in texts(waiting)[1]
    assert approved.structured_content["status"] == "completed"
    assert texts(approved)[1] == "The tools said: deleted /tmp/old.log"


def test_the_http_answer_the_result_describes_reaches_the_run(host: RunningHost) -> None:
    waiting = call_tool(host, "approve", {"input": "Draft A"})
    run_id = waiting.structured_content["runId"]
    request_id = waiting.structured_content["pendingRequests"][0]["requestId"]
    path = texts(waiting)[0].split("POST ", 1)[1].split(" ", 1)[0].replace("{requestId}", request_id)

    posted = host.request("POST", path, {"response": False})
    read = call_tool(host, "approve", {"runId": run_id})

    assert posted.status == 202
    assert read.structured_content["outputs"] == ["rejected: Draft A"]


def test_an_answer_sent_again_is_a_retry_and_the_first_answer_stands(host: RunningHost) -> None:
    waiting = call_tool(host, "approve", {"input": "Draft B"})
    run_id = waiting.structured_content["runId"]
    request_id = waiting.structured_content["pendingRequests"][0]["requestId"]
    arguments = {"runId": run_id, "requestId": request_id, "response": "true"}

    first = call_tool(host, "approve", arguments)
    again = call_tool(host, "approve", {**arguments, "response": "false"})

    assert again.is_error is False
    assert texts(again)[0] == f"Request {request_id} of run {run_id} was answered before this call; that answer stands."
    assert again.structured_content == first.structured_content
    assert again.structured_content["outputs"] == ["published: Draft B"]


def test_an_answer_that_does_not_fit_is_refused_and_the_request_stays_pending(host: RunningHost) -> None:
    waiting = call_tool(host, "approve", {"input": "Draft C"})
    run_id = waiting.structured_content["runId"]
    request_id = waiting.structured_content["pendingRequests"][0]["requestId"]

    wrong = call_tool(host, "approve", {"runId": run_id, "requestId": request_id, "response": "maybe"})
    unknown = call_tool(host, "approve", {"runId": run_id, "requestId": "no-such-request", "response": "true"})

    assert (wrong.is_error, wrong.structured_content["error"]["code"]) == (True, "invalid_response")
    assert "expects a bool" in wrong.structured_content["error"]["message"]
    assert wrong.structured_content["runId"] == run_id
    assert unknown.structured_content["error"]["code"] == "request_not_found"
    assert request_id in unknown.structured_content["error"]["message"]
    assert http_run(host, "approve", run_id)["pendingRequests"] == waiting.structured_content["pendingRequests"]


def test_a_failing_workflow_is_a_tool_error_with_the_runs_code_and_message(host: RunningHost) -> None:
    result = call_tool(host, "broken", {"input": "restock"})

    run_id = result.structured_content["runId"]
    error = http_run(host, "broken", run_id)["error"]
    assert result.is_error is True
    assert error["code"] == "workflow_failed"
    assert "Executor 'broken' failed" in error["message"]
    assert result.structured_content["error"] == error
    assert result.structured_content["status"] == "failed"
    assert texts(result) == [f"workflow_failed: {error['message']}"]


def test_a_retry_with_the_same_key_does_not_start_a_second_run(host: RunningHost) -> None:
    before = EXECUTIONS["shout"]
    arguments = {"input": "once", "idempotencyKey": "shout-call-1"}

    first = call_tool(host, "shout", arguments)
    retry = call_tool(host, "shout", arguments)
    over_http = host.request(
        "POST", RUNS.format(workflow="shout"), {"input": "once"}, headers={"Idempotency-Key": "shout-call-1"}
    )
    reused = call_tool(host, "shout", {"input": "twice", "idempotencyKey": "shout-call-1"})
    other = call_tool(host, "shout", {"input": "once", "idempotencyKey": "shout-call-2"})

    assert retry.structured_content == first.structured_content
    assert texts(retry) == texts(first)
    assert over_http.json()["runId"] == first.structured_content["runId"]  # one key names one run, either way
    assert (reused.is_error, reused.structured_content["error"]["code"]) == (True, "idempotency_key_reused")
    assert other.structured_content["runId"] != first.structured_content["runId"]
    assert EXECUTIONS["shout"] - before == 2  # the first call's run and the other key's run


def test_a_retry_while_the_run_waits_for_input_returns_the_same_request(host: RunningHost) -> None:
    before = EXECUTIONS["approve"]
    arguments = {"input": "Draft D", "idempotencyKey": "approve-call-1"}

    first = call_tool(host, "approve", arguments)
    retry = call_tool(host, "approve", arguments)

    assert retry.structured_content == first.structured_content
    assert retry.structured_content["status"] == "waiting_for_input"
    assert EXECUTIONS["approve"] - before == 1


def test_a_run_that_outlasts_the_wait_says_how_to_read_it_and_reading_does_not_rerun(start: Start) -> None:
    running = start(HostSettings(max_wait_seconds=0.5))
    before = EXECUTIONS["slow"]
    Slow.release.clear()
    arguments = {"input": "patience", "idempotencyKey": "slow-call-1"}

    try:
        pending = call_tool(running, "slow", arguments)
    finally:
        Slow.release.set()
    run_id = pending.structured_content["runId"]
    read = call_tool(running, "slow", {"runId": run_id})
    retried = call_tool(running, "slow", arguments)

    assert pending.is_error is True
    assert pending.structured_content["status"] == "running"
    assert texts(pending) == [
        f"Run {run_id} of workflow slow is still running after 0.5 s. It goes on without this call: call slow with "
        f'{{"runId": "{run_id}"}} to wait for its outputs again.'
    ]
    assert read.structured_content["outputs"] == ["finally: patience"]
    assert retried.structured_content == read.structured_content
    assert EXECUTIONS["slow"] - before == 1


def test_a_terminated_run_is_a_tool_error_saying_so(start: Start) -> None:
    running = start(HostSettings(max_wait_seconds=0.5))
    Slow.release.clear()
    try:
        pending = call_tool(running, "slow", {"input": "never mind"})
        run_id = pending.structured_content["runId"]
        assert running.host is not None
        client = df.DurableOrchestrationClient(running.host.durable_client_binding())
        running.call(client.terminate(run_id, "no longer needed"))
    finally:
        Slow.release.set()

    read = call_tool(running, "slow", {"runId": run_id})

    assert read.is_error is True
    assert read.structured_content["status"] == "terminated"
    assert read.structured_content["error"] == {
        "code": "workflow_terminated",
        "message": f"Run {run_id} of workflow slow was terminated before it finished.",
    }
    assert texts(read) == [f"workflow_terminated: Run {run_id} of workflow slow was terminated before it finished."]


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("shout", {}, "invalid_workflow_run"),
        ("shout", {"input": "x", "runId": "r1"}, "invalid_workflow_run"),
        ("shout", {"input": "x", "requestId": "q1", "response": "true"}, "invalid_workflow_run"),
        ("shout", {"runId": "bad id"}, "invalid_run_id"),
        ("shout", {"runId": 7}, "invalid_run_id"),
        ("shout", {"runId": "r1", "requestId": "q1"}, "invalid_response"),
        ("shout", {"runId": "r1", "response": "true"}, "invalid_response"),
        ("shout", {"runId": "no-such-run"}, "run_not_found"),
        ("shout", {"input": "x", "idempotencyKey": "has spaces"}, "invalid_idempotency_key"),
        ("shout", {"input": "x" * 2000}, "message_too_large"),
        ("order", {"input": {"item": "tea"}}, "invalid_workflow_input"),
        ("order", {"input": "two teas"}, "invalid_workflow_input"),
    ],
)
def test_unusable_arguments_are_tool_errors_naming_the_problem_and_start_nothing(
    start: Start, tool: str, arguments: dict[str, Any], code: str
) -> None:
    running = start(HostSettings(max_message_bytes=1000))
    before = dict(EXECUTIONS)

    result = call_tool(running, tool, arguments)

    assert result.is_error is True
    assert result.structured_content["error"]["code"] == code
    assert result.structured_content["workflow"] == tool
    assert texts(result) == [f"{code}: {result.structured_content['error']['message']}"]
    assert dict(EXECUTIONS) == before


def test_one_session_starts_a_run_and_answers_it_with_a_json_boolean(host: RunningHost) -> None:
    async def flow(session: ClientSession) -> list[CallToolResult]:
        waiting = await session.call_tool("approve", {"input": "Draft E"})
        run_id = waiting.structured_content["runId"]
        request_id = waiting.structured_content["pendingRequests"][0]["requestId"]
        answered = await session.call_tool("approve", {"runId": run_id, "requestId": request_id, "response": False})
        return [waiting, answered]

    waiting, answered = with_session(host, flow)

    request_id = waiting.structured_content["pendingRequests"][0]["requestId"]
    assert texts(answered)[0] == f"Answered request {request_id} of run {waiting.structured_content['runId']}."
    assert answered.structured_content["outputs"] == ["rejected: Draft E"]


def test_add_workflow_decides_per_workflow_over_the_apps_setting() -> None:
    def shout(name: str) -> Any:
        return WorkflowBuilder(name=name, start_executor=Shout(id="shout")).build()

    app = AgentFunctionApp(workflows=[shout("on_by_default")], settings=HostSettings(), enable_mcp_tool_trigger=True)
    app.add_workflow(shout("opted_out"), enable_mcp_tool_trigger=False)
    off_app = AgentFunctionApp(workflows=[shout("off_by_default")], settings=HostSettings())
    off_app.add_workflow(shout("opted_in"), enable_mcp_tool_trigger=True)

    assert [(tool.name, tool.target) for tool in app.mcp_tools.tools] == [("on_by_default", "workflow")]
    assert [tool.name for tool in off_app.mcp_tools.tools] == ["opted_in"]


def test_a_workflow_tool_named_like_an_agent_tool_is_refused_before_the_workflow_is_registered() -> None:
    app = AgentFunctionApp(
        agents=[make_agent(OfflineChatClient(), "review")], settings=HostSettings(), enable_mcp_tool_trigger=True
    )
    workflow = WorkflowBuilder(name="Review", start_executor=Shout(id="shout")).build()

    with pytest.raises(ValueError, match=r"MCP tool name 'Review' is taken \(by the agent tool 'review'\)"):
        app.add_workflow(workflow)
    # Nothing of the workflow was registered: it can still be hosted, without a tool.
    app.add_workflow(workflow, enable_mcp_tool_trigger=False)

    assert [tool.name for tool in app.mcp_tools.tools] == ["review"]
