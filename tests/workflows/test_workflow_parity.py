"""Parity: the same `Workflow` run in process with core and hosted, cold before every step, gives the same outputs
and sends every model call of every agent node the same messages.

Side (a) runs `workflow.run(input)` in memory. Side (b) starts a run over HTTP on the local host, where every
orchestrator episode, executor activity and entity batch runs on a newly built app (tests/workflows/cold_host.py).
Model inputs are compared as a model receives them (role, author, every content), as the compaction parity suite
compares them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentResponse, Message, Workflow
from cold_host import ColdHost
from parity_fakes import model_view
from parity_workflows import MATRIX, Models

from agent_host import AgentFunctionApp, HostSettings
from agent_host._event_loop import AGENT_LOOP

# Core gives each function call content a random `af-call-...` id of its own; the model never sees it.
_CALL_CONTENT_ID = re.compile(r"af-call-[0-9a-f]{32}")


def without_random_ids(value: Any) -> Any:
    """`value` with core's random function-call content ids blanked."""
    return json.loads(_CALL_CONTENT_ID.sub("<af-call>", json.dumps(value)))


def comparable_output(output: Any) -> Any:
    """An output as both sides can show it: an agent response as the messages a model would be shown."""
    if isinstance(output, AgentResponse):
        return [model_view(message) for message in output.messages]
    if isinstance(output, dict) and output.get("type") == "agent_response":
        return [model_view(Message.from_dict(message)) for message in output["messages"]]
    return output


def run_in_process(build: Any, value: Any) -> tuple[list[Any], dict[str, Any]]:
    models = Models()
    workflow: Workflow = build(models)
    result = AGENT_LOOP.run(workflow.run(value))
    outputs = [comparable_output(output) for output in result.get_outputs()]
    return without_random_ids(outputs), without_random_ids(models.calls())


def run_hosted(build: Any, value: Any, state_dir: Path) -> tuple[list[Any], dict[str, Any], int]:
    models = Models()

    def factory() -> AgentFunctionApp:
        return AgentFunctionApp(workflows=[build(models)], settings=HostSettings())

    host = ColdHost(factory, state_dir)
    try:
        name = build(Models()).name
        reply = host.request("POST", f"/api/workflows/{name}/runs", {"input": value, "timeoutSeconds": 60})
        body = reply.json()
        assert reply.status == 200, body
        assert body["status"] == "completed", body
        outputs = [comparable_output(output) for output in body["outputs"]]
        return without_random_ids(outputs), without_random_ids(models.calls()), host.cold_starts
    finally:
        host.stop()


@pytest.mark.parametrize("case", list(MATRIX), ids=list(MATRIX))
def test_hosted_run_matches_core_outputs_and_model_inputs(case: str, tmp_path: Path) -> None:
    build, value = MATRIX[case]

    core_outputs, core_calls = run_in_process(build, value)
    hosted_outputs, hosted_calls, cold_starts = run_hosted(build, value, tmp_path)

    assert hosted_outputs == core_outputs
    assert hosted_calls == core_calls
    assert sum(len(calls) for calls in core_calls.values()) >= 2
    assert cold_starts > 3
