"""WorkflowHitlContext: the URLs an executor gives a person to answer a request, built as the published class does."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework._workflows._events import WorkflowEvent

from agent_host import WorkflowHitlContext
from agent_host.__main__ import name_website_host
from agent_host._workflows.activity import HostedRunnerContext
from agent_host._workflows.hitl_context import route_prefix


@pytest.fixture(autouse=True)
def fresh_prefix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("AzureWebJobsScriptRoot", str(tmp_path))
    monkeypatch.delenv("WEBSITE_HOSTNAME", raising=False)
    route_prefix.cache_clear()
    yield tmp_path
    route_prefix.cache_clear()


class Executor:
    """What an executor handler's `ctx` offers: its runner context."""

    def __init__(self, runner_context: Any) -> None:
        self._runner_context = runner_context


def hosted(**metadata: str) -> Executor:
    return Executor(HostedRunnerContext(metadata))


def test_from_context_reads_the_runs_host_metadata() -> None:
    ctx = hosted(instance_id="run-1", workflow_name="content_moderation", request_path_prefix="review~0~")

    hitl = WorkflowHitlContext.from_context(ctx, base_url="https://contoso.example/")

    assert hitl == WorkflowHitlContext("run-1", "content_moderation", "https://contoso.example/", "review~0~")
    assert hitl.build_respond_url("r1") == (
        "https://contoso.example/api/workflow/content_moderation/respond/run-1/review~0~r1"
    )
    assert hitl.build_status_url() == "https://contoso.example/api/workflow/content_moderation/status/run-1"


@pytest.mark.parametrize(
    "ctx",
    [Executor(None), hosted(), hosted(instance_id="run-1"), Executor(HostedRunnerContext(None)), object()],
    ids=["no runner context", "no metadata", "no workflow name", "in process", "not a context"],
)
def test_from_context_is_none_off_the_host(ctx: Any) -> None:
    assert WorkflowHitlContext.from_context(ctx) is None


@pytest.mark.parametrize(
    ("hostname", "base"),
    [
        ("myapp.azurewebsites.net", "https://myapp.azurewebsites.net"),
        ("localhost:7071", "http://localhost:7071"),
        ("127.0.0.1:7071/", "http://127.0.0.1:7071"),
        ("[::1]:7071", "http://[::1]:7071"),
        ("::1", "http://::1"),
        ("0.0.0.0:80", "http://0.0.0.0:80"),
        ("http://gateway.example/", "http://gateway.example"),
    ],
)
def test_the_base_url_comes_from_website_hostname(monkeypatch: pytest.MonkeyPatch, hostname: str, base: str) -> None:
    monkeypatch.setenv("WEBSITE_HOSTNAME", hostname)

    assert WorkflowHitlContext("run-1", "wf").base_url == base


def test_without_a_base_url_building_one_says_what_to_set() -> None:
    with pytest.raises(RuntimeError, match="Set the 'WEBSITE_HOSTNAME' app setting"):
        WorkflowHitlContext("run-1", "wf").build_respond_url("r1")


@pytest.mark.parametrize(("configured", "url"), [("/agents/", "http://h/agents/workflow"), ("", "http://h/workflow")])
def test_the_route_prefix_comes_from_host_json(fresh_prefix: Path, configured: str, url: str) -> None:
    (fresh_prefix / "host.json").write_text(json.dumps({"extensions": {"http": {"routePrefix": configured}}}))

    assert WorkflowHitlContext("run-1", "wf", "http://h").build_status_url() == f"{url}/wf/status/run-1"


def test_pending_request_id_is_the_newest_request_the_executor_made() -> None:
    runner = HostedRunnerContext({"instance_id": "run-1", "workflow_name": "wf"})
    for request_id in ("first", "second"):
        event = WorkflowEvent.request_info(
            request_id=request_id, source_executor_id="review", request_data="ok?", response_type=bool
        )
        asyncio.run(runner.add_request_info_event(event))

    assert asyncio.run(WorkflowHitlContext.pending_request_id(Executor(runner))) == "second"
    assert asyncio.run(WorkflowHitlContext.pending_request_id(Executor(HostedRunnerContext(None)))) is None
    assert asyncio.run(WorkflowHitlContext.pending_request_id(object())) is None


def test_serve_names_its_own_address_as_the_website_host_unless_one_is_set() -> None:
    unset: dict[str, str] = {}
    empty = {"WEBSITE_HOSTNAME": ""}  # as the local.settings.json template has it
    azure = {"WEBSITE_HOSTNAME": "myapp.azurewebsites.net"}
    ephemeral: dict[str, str] = {}

    for environ in (unset, empty, azure):
        name_website_host(environ, "127.0.0.1", 7071)
    name_website_host(ephemeral, "127.0.0.1", 0)

    assert unset == empty == {"WEBSITE_HOSTNAME": "127.0.0.1:7071"}
    assert azure == {"WEBSITE_HOSTNAME": "myapp.azurewebsites.net"}
    assert ephemeral == {}
