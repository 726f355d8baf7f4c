"""Imports point down the data flow (HTTP -> signal -> entity -> agent -> state), never back up.

Each module of `agent_host` belongs to a layer; a module may import its own layer or a lower one. An import from a
lower layer to a higher one means a concept sits in the wrong place.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "agent_host"

# Lowest first. The first matching prefix decides a module's layer.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            # The seams onto dependencies' private internals: they know the dependencies, nothing of the package.
            "agent_host._deps",
            "agent_host._clock",
            "agent_host._errors",
            "agent_host._records",
            "agent_host._retention_settings",
            "agent_host._expiry_settings",
            "agent_host._approval_ttl",
            "agent_host._structured_output",
            "agent_host._turn_options",
            "agent_host._turn_ids",
            "agent_host._published_state",
            "agent_host._contract",
            "agent_host._settings",
            "agent_host._owners",
            "agent_host._event_loop",
            "agent_host._telemetry",
            "agent_host._tracing",
            "agent_host._offline",
            "agent_host._streaming",
            # The MCP extension's protocol, served by the local host and the worker: it knows nothing of the package.
            "agent_host._mcp_extension",
            # What a workflow run and the HTTP side both speak: the run's contract, its codec and message identity.
            "agent_host._workflows.contract",
            "agent_host._workflows.codec",
            "agent_host._workflows.projection",
        ),
    ),
    ("state", ("agent_host._conversation.state",)),
    ("conversation", ("agent_host._conversation",)),
    ("entity", ("agent_host._conversation.entity",)),
    # Idle expiry's orchestration and its starters: used by the HTTP routes, MCP tools, orchestrations and workflows.
    ("expiry", ("agent_host._expiry",)),
    # How every trigger reaches a conversation: signal, read its view, wait, take a turn.
    ("client", ("agent_host._conversation_client",)),
    ("http", ("agent_host._http",)),
    ("inspector", ("agent_host._inspector",)),
    ("orchestration", ("agent_host._orchestrations",)),
    ("mcp", ("agent_host._mcp",)),
    ("workflows", ("agent_host._workflows",)),
    ("host", ("agent_host._local_host", "agent_host._app", "agent_host.__main__", "agent_host")),
]
# What a layer must not import even though it is lower: the trigger side (HTTP routes, MCP tools) knows the contract
# and the stored shapes, not how history, sessions or the decoded-state cache work; the local host knows the
# Functions protocol only.
_TRIGGER_SIDE_MUST_NOT_KNOW = (
    "agent_host._conversation.entity",
    "agent_host._conversation.history",
    "agent_host._conversation.history_plan",
    "agent_host._conversation.sessions",
    "agent_host._conversation.state_cache",
    "agent_host._conversation.message_reuse",
    "agent_host._conversation.fragment_encoder",
    "agent_host._conversation.retention",
)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "agent_host._conversation_client": _TRIGGER_SIDE_MUST_NOT_KNOW,
    "agent_host._http": _TRIGGER_SIDE_MUST_NOT_KNOW,
    "agent_host._mcp": _TRIGGER_SIDE_MUST_NOT_KNOW,
    "agent_host._inspector": _TRIGGER_SIDE_MUST_NOT_KNOW,
    "agent_host._local_host": (
        "agent_host._conversation",
        "agent_host._http",
        "agent_host._contract",
        "agent_host._mcp",
    ),
    "agent_host._mcp_extension": (
        "agent_host._conversation",
        "agent_host._http",
        "agent_host._contract",
        "agent_host._mcp",
    ),
    # An orchestration reaches a conversation only through the entity's wire contract, as the HTTP side does.
    "agent_host._orchestrations": ("agent_host._conversation", "agent_host._http"),
    # So does the expiry orchestration: it asks the entity, it never reads the state itself.
    "agent_host._expiry": ("agent_host._conversation", "agent_host._http"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    ranked = sorted(
        ((rank, prefix) for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes),
        key=lambda item: -len(item[1]),
    )
    for rank, prefix in ranked:
        if module == prefix or module.startswith(prefix + "."):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


def imports_of(path: Path) -> set[str]:
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("agent_host"):
            found.add(node.module)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {name for name in found if name in modules}


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(path) for path in SOURCES])
def test_a_module_imports_only_its_own_layer_or_lower_ones(path: Path) -> None:
    module = module_name(path)
    upward = [name for name in imports_of(path) if layer_of(name) > layer_of(module)]

    assert upward == [], f"{module} ({LAYERS[layer_of(module)][0]}) imports higher layers: {upward}"


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(path) for path in SOURCES])
def test_a_module_keeps_out_of_what_its_layer_must_not_know(path: Path) -> None:
    module = module_name(path)
    rules = [banned for owner, banned in FORBIDDEN.items() if module == owner or module.startswith(owner + ".")]
    banned = [
        name
        for name in imports_of(path)
        for rule in rules
        for prefix in rule
        if name == prefix or name.startswith(prefix + ".")  # a package and its modules, not a longer name
    ]

    assert banned == [], f"{module} imports {banned}"


def test_the_layer_check_sees_a_violation() -> None:
    # The checker itself can fail: an entity import from the HTTP side is caught.
    assert layer_of("agent_host._conversation.entity") < layer_of("agent_host._http.routes")
    assert layer_of("agent_host._conversation.state") < layer_of("agent_host._conversation.retention")
    assert layer_of("agent_host._http.routes") > layer_of("agent_host._conversation.turn_receipts")
