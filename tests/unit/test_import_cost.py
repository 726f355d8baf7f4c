"""Importing the package, or one of its modules, loads what that needs and no more: measured in a fresh interpreter.

`import agent_host` loads the errors, the clock and the stream types; the app (and with it azure.functions and every
layer) loads when `AgentFunctionApp` is first used. The conversation entity loads neither azure.functions nor the
layers above it (HTTP, MCP, the inspector, the local host).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import agent_host

ROOT = Path(__file__).resolve().parents[2]
ABOVE_THE_ENTITY = (
    "agent_host._app",
    "agent_host._http",
    "agent_host._mcp",
    "agent_host._inspector",
    "agent_host._local_host",
    "agent_host._orchestrations.agent",
    "agent_host._workflows",
)


def loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running `statement` (in the worktree, so its agent_host loads)."""
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_package_loads_neither_azure_functions_nor_agent_framework() -> None:
    loaded = loaded_after("import agent_host")

    assert "azure.functions" not in loaded
    assert "agent_framework" not in loaded
    assert len({name for name in loaded if name.startswith("agent_host")}) <= 12, sorted(loaded)


def test_importing_the_conversation_entity_loads_neither_azure_functions_nor_the_layers_above_it() -> None:
    loaded = loaded_after("import agent_host._conversation.entity")

    assert "azure.functions" not in loaded
    assert "azure.durable_functions" not in loaded
    above = [
        name for name in loaded if any(name == layer or name.startswith(f"{layer}.") for layer in ABOVE_THE_ENTITY)
    ]
    assert sorted(above) == []


def test_a_public_name_loads_its_module_on_first_use() -> None:
    before = loaded_after("import agent_host")
    after = loaded_after("import agent_host; agent_host.AgentFunctionApp")

    assert "agent_host._app" not in before
    assert {"agent_host._app", "azure.functions"} <= after


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    from agent_host._app import AgentFunctionApp
    from agent_host._settings import chat_client_from_settings

    assert agent_host.AgentFunctionApp is AgentFunctionApp
    assert agent_host.chat_client_from_settings is chat_client_from_settings
    assert all(getattr(agent_host, name) is not None for name in agent_host.__all__)
