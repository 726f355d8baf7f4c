"""Apps the Python worker refuses to load are refused by the local host at startup, with the worker's reason and the
function's name, in either invocation mode (before, the local host served them and they failed per call, or worked
locally and then failed on Azure)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import azure.functions as func
import pytest

from agent_host.__main__ import load_app
from agent_host._local_host import LocalHost

REFUSED = "The Azure Functions Python worker refuses this app: cannot load the "


def refusal(app: func.FunctionApp, tmp_path: Path, mode: str) -> str:
    with pytest.raises(ValueError) as raised:
        LocalHost(app, state_dir=tmp_path, port=0, invocation=mode)
    return str(raised.value)


def test_a_trigger_parameter_named_unlike_its_binding_is_refused(tmp_path: Path, mode: str) -> None:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="hello")
    def hello(request: func.HttpRequest) -> func.HttpResponse:  # the trigger's binding is named `req`
        return func.HttpResponse("hi")

    message = refusal(app, tmp_path, mode)

    assert message.startswith(f"{REFUSED}hello function: the following parameters are declared in Python but not")
    assert "{'request'}" in message


def test_a_durable_client_parameter_named_unlike_client_name_is_refused(tmp_path: Path, mode: str) -> None:
    app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="start")
    @app.durable_client_input(client_name="client")
    async def start(req: func.HttpRequest, durable: df.DurableOrchestrationClient) -> func.HttpResponse:
        return func.HttpResponse("started")

    message = refusal(app, tmp_path, mode)

    assert message.startswith(f"{REFUSED}start function: ")
    assert "{'durable'}" in message or "{'client'}" in message


def test_a_parameterized_generic_binding_annotation_is_refused(tmp_path: Path, mode: str) -> None:
    app = df.DFApp()

    @app.activity_trigger(input_name="payload")
    def tally(payload: dict[str, Any]) -> int:
        return len(payload)

    message = refusal(app, tmp_path, mode)

    assert message.startswith(f"{REFUSED}tally function: binding payload has invalid non-type annotation dict[str")


def test_an_http_function_annotated_with_another_return_type_is_refused(tmp_path: Path, mode: str) -> None:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="data")
    def data(req: func.HttpRequest) -> dict:
        return {"a": 1}

    message = refusal(app, tmp_path, mode)

    assert message.startswith(f'{REFUSED}data function: Python return annotation "dict" does not match binding type')


def test_an_app_the_worker_loads_is_not_refused(tmp_path: Path, mode: str) -> None:
    app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="start")
    @app.durable_client_input(client_name="client")
    async def start(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        return func.HttpResponse("started")

    @app.activity_trigger(input_name="payload")
    def tally(payload: dict) -> int:
        return len(payload)

    host = LocalHost(app, state_dir=tmp_path, port=0, invocation=mode)
    host.close()

    assert host.invoker.mode.value == mode
    assert [route.function_name for route in host.routes] == ["start"]


TWO_APPS = """
import azure.functions as func

app = func.FunctionApp()
admin = func.FunctionApp()
"""
OTHER_NAME = """
import azure.functions as func

app = func.FunctionApp()
"""


def load_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str) -> Any:
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    return load_app(f"{module}:app")


def test_serve_refuses_a_module_with_two_function_apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as raised:
        load_from(tmp_path, monkeypatch, "function_app", TWO_APPS)

    message = str(raised.value)
    assert "defines 2 function apps (app, admin)" in message
    assert "More than one FunctionApp or other top level function app instances are defined" in message


def test_serve_warns_when_the_worker_would_load_another_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_host.serve"):
        app = load_from(tmp_path, monkeypatch, "my_agents", OTHER_NAME)

    assert isinstance(app, func.FunctionApp)
    [warning] = [record.getMessage() for record in caplog.records if record.name == "agent_host.serve"]
    assert f"comes from {tmp_path / 'my_agents.py'}" in warning
    assert f"loads {tmp_path / 'function_app.py'}" in warning


def test_serve_does_not_warn_for_function_app_at_the_script_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_host.serve"):
        load_from(tmp_path, monkeypatch, "function_app", OTHER_NAME)

    assert [record for record in caplog.records if record.name == "agent_host.serve"] == []
