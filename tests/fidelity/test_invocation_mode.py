"""Which code runs the functions: the worker's own on Python 3.13+ (so CI's 3.13 run puts every end-to-end suite
through it), direct calls elsewhere, and the banner line saying which and why."""

from __future__ import annotations

import sys
from pathlib import Path

import azure.functions as func
import pytest

from agent_host._local_host import LocalHost


def small_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="ping")
    def ping(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("ok")

    return app


def default_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalHost:
    monkeypatch.delenv("AGENT_HOST_INVOCATION", raising=False)
    host = LocalHost(small_app(), state_dir=tmp_path, port=0)
    host.close()
    return host


@pytest.mark.skipif(sys.version_info < (3, 13), reason="the worker's library needs Python 3.13+")
def test_on_python_313_the_functions_run_through_the_workers_own_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = default_host(tmp_path, monkeypatch)

    assert host.invoker.mode.value == "worker"
    assert host.invoker.description.startswith("the Azure Functions Python worker's own code (azure-functions-runtime")


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13+ runs the worker's own code")
def test_before_python_313_the_functions_are_called_directly_and_the_banner_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = default_host(tmp_path, monkeypatch)

    assert host.invoker.mode.value == "direct"
    assert "needs Python 3.13+ and this is Python 3.1" in host.invoker.description


def test_direct_calls_can_be_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOST_INVOCATION", "direct")

    host = LocalHost(small_app(), state_dir=tmp_path, port=0)
    host.close()

    assert host.invoker.mode.value == "direct"
    assert "as asked (AGENT_HOST_INVOCATION=direct)" in host.invoker.description


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'sideways' is not an invocation mode"):
        LocalHost(small_app(), state_dir=tmp_path, port=0, invocation="sideways")


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13+ runs the worker's own code")
def test_the_worker_asked_for_where_it_cannot_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="AGENT_HOST_INVOCATION=worker, but azure-functions-runtime"):
        LocalHost(small_app(), state_dir=tmp_path, port=0, invocation="worker")
