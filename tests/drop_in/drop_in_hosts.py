"""Serving the drop-in sample apps on the local host: one host per sample app, shared by that sample's tests."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hosting import Reply, RunningHost


@contextlib.contextmanager
def serving(app_factory: Callable[[], Any], state_dir: Path) -> Iterator[RunningHost]:
    """The app on a local host until the block ends."""
    running = RunningHost(app_factory, state_dir)
    try:
        yield running
    finally:
        running.stop()


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
