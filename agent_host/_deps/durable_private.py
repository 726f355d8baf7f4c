"""azure-functions-durable's private names this package relies on; nothing else reads an underscore of the SDK.

Checked on azure-functions-durable 1.7.0 (requirements.txt allows >=1.7.0,<1.8). Each assumption is pinned by a test
of the same name in tests/deps/test_private_assumptions.py:

- `holds_raw_state`, `raw_entity_state`, `mark_entity_state_raw`: a `DurableEntityContext` keeps the host's state
  string at `_state` while `_state_is_raw` is true (set by `from_json` when the host sent state, cleared by
  `set_state`), and hands a raw string to the host as it is when the batch ends.
- `rpc_base_url`, `task_hub_name`: a `DurableOrchestrationClient` keeps its binding at `_orchestration_bindings`, whose
  `rpc_base_url` and `task_hub_name` name the durable host the client talks to (the SDK has no public accessor).
- `close_shared_session`: `models.utils.http_utils._close_session()` closes the aiohttp session the SDK's clients
  share in a process.

The SDK is imported for type checking only, or inside the function that needs it: `azure.durable_functions` loads
`azure.functions`, which a module importing this one (the conversation entity) must not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import azure.durable_functions as df

__all__ = [
    "close_shared_session",
    "holds_raw_state",
    "mark_entity_state_raw",
    "raw_entity_state",
    "rpc_base_url",
    "task_hub_name",
]


def holds_raw_state(context: df.DurableEntityContext) -> bool:
    """Whether the context still holds the state string the host sent, undecoded."""
    return bool(getattr(context, "_state_is_raw", False))


def raw_entity_state(context: df.DurableEntityContext) -> str | None:
    """The state string exactly as the host sent it (only while `holds_raw_state`)."""
    return context._state


def mark_entity_state_raw(context: df.DurableEntityContext) -> None:
    """After `set_state(text)`: have the SDK hand `text` to the host as it is, not encode it a second time."""
    if hasattr(context, "_state_is_raw"):
        context._state_is_raw = True


def rpc_base_url(client: df.DurableOrchestrationClient) -> str:
    """The root of the durable host's webhook API, where the SDK sends its own calls."""
    return str(client._orchestration_bindings.rpc_base_url)


def task_hub_name(client: df.DurableOrchestrationClient) -> str:
    """The task hub the client's binding names."""
    return str(client._orchestration_bindings.task_hub_name)


async def close_shared_session() -> None:
    """Close the HTTP session the SDK's clients share in this process (the next call opens a new one)."""
    from azure.durable_functions.models.utils import http_utils

    await http_utils._close_session()
