"""Traces: one per turn, from the HTTP request across the durable hop to the entity operation and core's spans.

The W3C trace context (`traceparent`, `tracestate`) travels in the entity operation's input, so the entity continues
the caller's trace whichever worker, batch or redelivery runs it. Exporters are the standard OpenTelemetry setup,
chosen from the environment; core's own `invoke_agent`/`chat`/`execute_tool` spans are core's, left as they are.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:  # the entity uses this module too, and never loads azure.functions
    import azure.functions as func

logger = logging.getLogger("agent_host.tracing")

TRACER_NAME = "agent_host"
TURN_ID_ATTRIBUTE = "agent_host.turn.id"
TRACE_CONTEXT_KEY = "traceContext"
"""The operation input's field holding the caller's W3C trace context (`traceparent`, `tracestate`)."""
CONNECTION_STRING_SETTING = "APPLICATIONINSIGHTS_CONNECTION_STRING"
AUTHENTICATION_STRING_SETTING = "APPLICATIONINSIGHTS_AUTHENTICATION_STRING"
OTLP_ENDPOINT_SETTINGS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
# Core's own switch for its console exporters (agent_framework.observability), so one setting turns on both.
CONSOLE_SETTING = "ENABLE_CONSOLE_EXPORTERS"
_PROPAGATOR = TraceContextTextMapPropagator()
_configured = False


def _tracer() -> trace.Tracer:
    # Looked up per use: the global provider may be configured after the app is built.
    return trace.get_tracer(TRACER_NAME)


def current_trace_context() -> dict[str, str] | None:
    """The current span's W3C trace context as `{"traceparent", "tracestate"}`, or None when there is no span."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier or None


def with_trace_context(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with the current trace context under `traceContext` (unchanged when there is none)."""
    carried = current_trace_context()
    return payload if carried is None else {**payload, TRACE_CONTEXT_KEY: carried}


def _parent(carrier: Mapping[str, str] | None) -> otel_context.Context:
    """The context a span continues: the carried trace when there is one, else whatever is current."""
    if carrier:
        extracted = _PROPAGATOR.extract(dict(carrier))
        if trace.get_current_span(extracted).get_span_context().is_valid:
            return extracted
    return otel_context.get_current()


def _route_of(req: func.HttpRequest) -> str:
    """The request's path with its route parameters as `{name}`, so span names stay few (not one per conversation)."""
    names = {value: f"{{{name}}}" for name, value in req.route_params.items() if value}
    return "/".join(names.get(segment, segment) for segment in urlsplit(req.url).path.split("/"))


@contextmanager
def http_span(req: func.HttpRequest) -> Iterator[trace.Span]:
    """A span for one HTTP request, current while its handler runs.

    It is a child of the current span when the worker already made one current (Azure Functions with its
    OpenTelemetry integration on), else it continues the request's own `traceparent` header, else starts a trace.
    """
    current = trace.get_current_span().get_span_context().is_valid
    parent = otel_context.get_current() if current else _PROPAGATOR.extract(dict(req.headers))
    route = _route_of(req)
    with _tracer().start_as_current_span(
        f"{req.method.upper()} {route}",
        context=parent,
        kind=trace.SpanKind.INTERNAL if current else trace.SpanKind.SERVER,
        attributes={"http.request.method": req.method.upper(), "http.route": route},
    ) as span:
        yield span


def record_status(span: trace.Span, status: int) -> None:
    """Put the response's status on the request's span; a 5xx marks the span failed."""
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(trace.StatusCode.ERROR)


@contextmanager
def operation_span(name: str, carrier: Mapping[str, str] | None, attributes: Mapping[str, Any]) -> Iterator[trace.Span]:
    """A span for one entity operation, current while it runs, continuing the trace its input carried.

    Each operation of a batch restores its own input's context, so a redelivered operation (the same input) parents
    under the same caller again. When the invocation has a trace of its own (the host's), the span links to it.
    """
    invocation = trace.get_current_span().get_span_context()
    parent = _parent(carrier)
    links = (
        [trace.Link(invocation)]
        if invocation.is_valid and invocation.trace_id != trace.get_current_span(parent).get_span_context().trace_id
        else []
    )
    with _tracer().start_as_current_span(
        name, context=parent, kind=trace.SpanKind.CONSUMER, attributes=dict(attributes), links=links
    ) as span:
        yield span


@contextmanager
def continued_trace(carrier: Mapping[str, str] | None) -> Iterator[None]:
    """Make the carried trace current (no span of its own), so the spans core starts inside are its children."""
    token = otel_context.attach(_parent(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


def orchestration_trace_context(started_event: Any) -> dict[str, str] | None:
    """The trace context an orchestration continues: its ExecutionStarted event's `ParentTraceContext` (the same
    on every replay), else the current span's.

    Args:
        started_event: The execution's ExecutionStarted history event, if there is one.
    """
    recorded = getattr(started_event, "ParentTraceContext", None)
    if isinstance(recorded, Mapping) and isinstance(recorded.get("TraceParent"), str):
        carried = {"traceparent": recorded["TraceParent"]}
        if isinstance(recorded.get("TraceState"), str) and recorded["TraceState"]:
            carried["tracestate"] = recorded["TraceState"]
        return carried
    return current_trace_context()


def configure_exporters() -> None:
    """Export traces (and core's metrics and logs) as the environment asks, once per process; nothing by default.

    `APPLICATIONINSIGHTS_CONNECTION_STRING`: Azure Monitor, through the azure-monitor-opentelemetry distro.
    `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces form) and `ENABLE_CONSOLE_EXPORTERS`: core's
    `configure_otel_providers`, which reads the same variables. An app that set a tracer provider itself keeps it.
    """
    global _configured
    if _configured:
        return
    _configured = True
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    if os.environ.get(CONNECTION_STRING_SETTING):
        _configure_azure_monitor()
        return
    otlp = any(os.environ.get(name) for name in OTLP_ENDPOINT_SETTINGS)
    console = os.environ.get(CONSOLE_SETTING, "").lower() in ("true", "1", "yes", "on")
    if otlp and not _importable("opentelemetry.exporter.otlp"):
        logger.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but no OTLP exporter is installed, so traces are not exported: "
            "add opentelemetry-exporter-otlp to requirements.txt."
        )
        otlp = False
    if otlp or console:
        from agent_framework.observability import configure_otel_providers

        configure_otel_providers(otlp_endpoint=None if otlp else "")


def _configure_azure_monitor() -> None:
    if not _importable("azure.monitor.opentelemetry"):
        # Info, not a warning: the deployment sets the connection string for the Functions host's own telemetry too.
        logger.info(
            "APPLICATIONINSIGHTS_CONNECTION_STRING is set but azure-monitor-opentelemetry is not installed, so the "
            "host's traces are not exported: add azure-monitor-opentelemetry to requirements.txt to export them."
        )
        return
    from agent_framework.observability import enable_instrumentation
    from azure.monitor.opentelemetry import configure_azure_monitor

    credential = _entra_credential(os.environ.get(AUTHENTICATION_STRING_SETTING, ""))
    configure_azure_monitor(**({"credential": credential} if credential is not None else {}))
    enable_instrumentation()


def _entra_credential(authentication: str) -> Any:
    """The managed identity `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` names (`ClientId=...;Authorization=AAD`), or
    None without one: the deployment turns Application Insights' key authentication off."""
    fields = dict(part.split("=", 1) for part in authentication.split(";") if "=" in part)
    if fields.get("Authorization", "").upper() != "AAD":
        return None
    from azure.identity import ManagedIdentityCredential

    return ManagedIdentityCredential(client_id=fields.get("ClientId") or None)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a missing parent package, a module without a spec
        return False
