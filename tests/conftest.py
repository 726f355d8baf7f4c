"""Shared fixtures: a scripted chat client, and the local host serving one agent on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost

# The template's local.settings.json sets it, and HTTP-streams apps need it (the local host refuses them without it):
# the tests' apps run with the app settings the template gives.
os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")


@pytest.fixture
def scripted() -> ScriptedChatClient:
    return ScriptedChatClient()


@pytest.fixture
def scripted_host(tmp_path: Path) -> Iterator[tuple[RunningHost, ScriptedChatClient]]:
    """The local host serving one agent on a scripted client, and that client; stopped afterwards."""
    client = ScriptedChatClient()
    running = RunningHost(lambda: build_app(make_agent(client)), tmp_path)
    yield running, client
    running.stop()
