"""Exporters come from the environment, once per process: Azure Monitor, OTLP, console, or nothing by default."""

from __future__ import annotations

import importlib.machinery
import logging
import sys
import types
from typing import Any

import agent_framework.observability as core_observability
import pytest
from azure.identity import ManagedIdentityCredential
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

import agent_host._tracing as tracing

CONNECTION_STRING = "InstrumentationKey=00000000-0000-0000-0000-000000000000"
SETTINGS = (
    "APPLICATIONINSIGHTS_CONNECTION_STRING",
    "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "ENABLE_CONSOLE_EXPORTERS",
)


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """What was configured: core's `configure_otel_providers` and Azure Monitor's `configure_azure_monitor` calls."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracing, "_configured", False)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(core_observability, "configure_otel_providers", lambda **kwargs: calls.append(("core", kwargs)))
    return calls


def fake_distro(monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """azure-monitor-opentelemetry as importable modules that record the call."""
    for name in ("azure.monitor", "azure.monitor.opentelemetry"):
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        monkeypatch.setitem(sys.modules, name, module)
    distro = sys.modules["azure.monitor.opentelemetry"]
    distro.configure_azure_monitor = lambda **kwargs: calls.append(("azure_monitor", kwargs))  # type: ignore[attr-defined]


def test_nothing_is_exported_by_default(configured: list[Any]) -> None:
    tracing.configure_exporters()

    assert configured == []
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_a_connection_string_exports_to_azure_monitor_through_its_distro(
    configured: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLICATIONINSIGHTS_CONNECTION_STRING", CONNECTION_STRING)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317")
    fake_distro(monkeypatch, configured)

    tracing.configure_exporters()

    assert configured == [("azure_monitor", {})]


def test_azure_monitor_signs_in_with_the_managed_identity_the_authentication_string_names(
    configured: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLICATIONINSIGHTS_CONNECTION_STRING", CONNECTION_STRING)
    monkeypatch.setenv("APPLICATIONINSIGHTS_AUTHENTICATION_STRING", "ClientId=1234;Authorization=AAD")
    fake_distro(monkeypatch, configured)

    tracing.configure_exporters()

    ((name, arguments),) = configured
    assert name == "azure_monitor"
    assert isinstance(arguments["credential"], ManagedIdentityCredential)


def test_a_connection_string_without_the_distro_says_what_to_install(
    configured: list[Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("APPLICATIONINSIGHTS_CONNECTION_STRING", CONNECTION_STRING)
    monkeypatch.setitem(sys.modules, "azure.monitor", None)  # not installed, whatever this machine has

    with caplog.at_level(logging.INFO, logger="agent_host.tracing"):
        tracing.configure_exporters()

    assert configured == []
    assert "add azure-monitor-opentelemetry to requirements.txt" in caplog.text


def test_an_otlp_endpoint_without_the_exporter_says_what_to_install(
    configured: list[Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter", None)

    with caplog.at_level(logging.WARNING, logger="agent_host.tracing"):
        tracing.configure_exporters()

    assert configured == []
    assert "add opentelemetry-exporter-otlp to requirements.txt" in caplog.text


def test_an_otlp_endpoint_with_the_exporter_is_cores_setup(
    configured: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317")
    monkeypatch.setattr(tracing, "_importable", lambda module: module == "opentelemetry.exporter.otlp")

    tracing.configure_exporters()

    assert configured == [("core", {"otlp_endpoint": None})]


def test_console_export_when_asked_is_cores_console_exporters(
    configured: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENABLE_CONSOLE_EXPORTERS", "true")

    tracing.configure_exporters()

    assert configured == [("core", {"otlp_endpoint": ""})]


def test_an_app_that_set_its_own_provider_keeps_it(configured: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENABLE_CONSOLE_EXPORTERS", "true")
    own = TracerProvider()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", own)

    tracing.configure_exporters()

    assert configured == []
    assert trace.get_tracer_provider() is own


def test_exporters_are_configured_once_per_process(configured: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENABLE_CONSOLE_EXPORTERS", "true")

    tracing.configure_exporters()
    tracing.configure_exporters()

    assert len(configured) == 1
