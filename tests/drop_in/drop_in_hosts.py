"""Serving the drop-in sample apps on the local host: one host per sample app, shared by that sample's tests."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hosting import Reply, RunningHost


@contextlib.contextmanager
def serving(app_factory: Callable[[], Any], state_dir: Path) -> Iterator[RunningHost]:
    """The app on a local host until the block ends."""
    running = RunningHost(app_factory, state_dir)
    try:
        yield running
    finally:
        running.stop()


def module_host(app_factory: Callable[[], Any]) -> Any:
    """A module-scoped fixture serving the app on a local host for all the module's tests."""

    @pytest.fixture(scope="module")
    def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHost]:
        with serving(app_factory, tmp_path_factory.mktemp("host")) as running:
            yield running

    return host


def run_agent(host: RunningHost, agent: str, body: Any, **kwargs: Any) -> Reply:
    """A `/run` request as the published host's clients send it."""
    return host.request("POST", f"/api/agents/{agent}/run", body, **kwargs)


def path_of(url: str) -> str:
    """The path and query of a URL the host answered with, to request it again."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def poll(
    host: RunningHost, path: str, done: Callable[[Reply], bool], *, timeout: float = 30.0, method: str = "GET"
) -> Reply:
    """GET `path` until `done(reply)` holds; the last reply when the time is up (the test's assertions then fail)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = host.request(method, path)
        if done(reply) or time.monotonic() > deadline:
            return reply
        time.sleep(0.02)
