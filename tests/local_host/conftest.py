"""Fixtures: the orchestration test app on a local host with a manual clock, deterministic by default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import ManualClock

from .driving import OrchestrationHost
from .orchestration_apps import build_orchestration_app


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def orchestrations(tmp_path: Path, clock: ManualClock) -> Iterator[OrchestrationHost]:
    """The test app on a local host whose episodes and activities run on one worker, in scheduling order."""
    running = OrchestrationHost(lambda: build_orchestration_app(clock), tmp_path / "state", clock)
    yield running
    running.stop()
