"""The host's OpenTelemetry metrics read in memory: a reader installed in place of the host's meter, and its points."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import agent_host._telemetry as telemetry_module


def install_metric_reader(monkeypatch: pytest.MonkeyPatch) -> InMemoryMetricReader:
    """Make the host record its metrics where the returned reader reads them (undone with `monkeypatch`)."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(telemetry_module, "_telemetry", telemetry_module.TurnTelemetry(provider.get_meter("test")))
    return reader


def counted(reader: InMemoryMetricReader, metric_name: str) -> dict[tuple[tuple[str, Any], ...], int]:
    """A counter's values by their attributes (sorted), empty when nothing was counted."""
    data = reader.get_metrics_data()
    found: dict[tuple[tuple[str, Any], ...], int] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == metric_name:
                    for point in metric.data.data_points:
                        found[tuple(sorted(point.attributes.items()))] = point.value
    return found
