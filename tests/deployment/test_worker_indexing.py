"""Contract: the real Python worker's indexing accepts the template app and sends the bindings we test elsewhere.

The worker's indexing code is published on PyPI as `azure-functions-runtime`, for Python 3.13 and later only
(earlier workers ship inside the Functions host). On older interpreters this module is skipped; CI runs it on
3.13 when that interpreter is present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from worker_metadata import template_app

pytest.importorskip(
    "azure_functions_runtime", reason="the worker's indexing package (azure-functions-runtime) needs Python 3.13+"
)

ROOT = Path(__file__).resolve().parents[2]
WORKER_SCRIPT = Path(__file__).with_name("worker_indexing.py")


FASTAPI_REQUEST = "starlette.requests.Request"
CLASSIC_APP = """
from agent_framework import Agent

from agent_host import AgentFunctionApp, OfflineChatClient

app = AgentFunctionApp(agents=[Agent(OfflineChatClient(), "Be brief.", name="assistant")])
"""


def run_worker_indexing(app_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_"))}
    env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [sys.executable, str(WORKER_SCRIPT), str(app_dir), str(ROOT)],
        cwd=app_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def index_with_worker(app_dir: Path) -> list[dict]:
    return run_worker_indexing(app_dir)["functions"]


def test_the_worker_indexes_every_function_with_the_bindings_the_app_declares() -> None:
    expected = template_app()

    report = index_with_worker(ROOT)

    assert {entry["name"]: tuple(entry["rawBindings"]) for entry in report} == {
        f.name: f.bindings for f in expected.functions
    }


def test_the_template_is_indexed_for_http_streams_with_the_fastapi_request_everywhere() -> None:
    # HTTP streams: the worker checks every HTTP function's request and response against the FastAPI types and hands
    # each the FastAPI request; one classic function would fail the whole app's indexing.
    report = run_worker_indexing(ROOT)

    http = {entry["name"]: entry["requestType"] for entry in report["functions"] if entry["isHttp"]}
    assert report["httpStreams"] is True
    assert "api_turn_stream" in http
    assert set(http.values()) == {FASTAPI_REQUEST}


def test_an_app_without_http_streams_is_indexed_the_classic_way(tmp_path: Path) -> None:
    (tmp_path / "function_app.py").write_text(CLASSIC_APP, encoding="utf-8")

    report = run_worker_indexing(tmp_path)

    http = {entry["name"]: entry["requestType"] for entry in report["functions"] if entry["isHttp"]}
    assert report["httpStreams"] is False
    assert set(http.values()) == {"azure.functions._http.HttpRequest"}
    conversation_routes = {"api_health", "api_turns", "api_turn", "api_turn_stream", "api_conversation"}
    assert conversation_routes | {"api_messages", "api_retention", "api_run", "api_workflow_runs"} <= set(http)


def test_the_worker_binds_request_client_and_entity_context_as_intended() -> None:
    report = {entry["name"]: entry for entry in index_with_worker(ROOT)}

    health = report.pop("api_health")
    models = [report.pop("api_openai_models"), report.pop("api_openai_model")]  # they list agents only
    entity = report.pop("conversation_assistant")
    watcher = report.pop("expiry_conversation")
    watch = report.pop("expiry_watch")

    assert (health["isHttp"], health["inputs"]) == (True, {"req": "httpTrigger"})
    assert [(e["isHttp"], e["inputs"]) for e in models] == [(True, {"req": "httpTrigger"})] * 2
    assert (entity["isHttp"], entity["inputs"]) == (False, {"context": "entityTrigger"})
    assert (watcher["isHttp"], watcher["inputs"]) == (False, {"context": "orchestrationTrigger"})
    assert (watch["isHttp"], watch["inputs"]) == (False, {"watch": "activityTrigger", "client": "generic"})
    # The durable client arrives as the binding's JSON string; DFApp turns it into a client object.
    assert {name: (e["isHttp"], e["inputs"]) for name, e in report.items()} == {
        name: (True, {"req": "httpTrigger", "client": "generic"}) for name in report
    }
