"""agent-framework-core's private workflow names; nothing else imports `agent_framework._workflows._*`.

Checked on agent-framework-core 1.23.0 (requirements.txt allows >=1.23.0,<1.24). Each assumption is pinned by a test
of the same name in tests/deps/test_private_assumptions.py:

- `normalize_messages_input`: `_workflows._message_utils.normalize_messages_input(data)` turns an agent node's input
  into messages, as `AgentExecutor` does.
- `is_instance_of`, `try_coerce_to_type`: `_workflows._typing_utils`' checks of a value against a handler's type.
- `pending_changes`: `_workflows._state.State` keeps a superstep's writes in `_pending` until `commit()`, with
  `_DeleteSentinel` standing for a deleted key.
- `MessageType`: `_workflows._runner_context.MessageType.RESPONSE` marks a message answering a request.
- `InternalEdgeGroup`: `_workflows._edge.InternalEdgeGroup`, the edge group core adds for its internal sources.
- `EdgeRunner`, `gather_cancelling_siblings_on_error`: `_workflows._edge_runner`'s runner base class and the
  concurrency helper core's runner delivers with.
- `State`: `_workflows._state.State()` is the shared state an executor's handlers and edge runners are given.
- `output_classifier`: `Workflow._output_designation.classify(executor_id)` says whether a yield is an output.
- `agent_context_mode`, `agent_context_filter`, `ensure_trailing_user_turn`: `AgentExecutor`'s `_context_mode`,
  `_context_filter` and `_ensure_trailing_user_turn` hold its constructor's arguments (`_context_mode` `full` unset).
- `edge_condition`: an `Edge`'s `_condition` holds the user's condition (None when there is none).
- `runner_context_of`: a `WorkflowContext` keeps the runner context it runs in at `_runner_context`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from agent_framework import AgentExecutor, Workflow
from agent_framework._workflows._edge import InternalEdgeGroup
from agent_framework._workflows._edge_runner import EdgeRunner, gather_cancelling_siblings_on_error
from agent_framework._workflows._message_utils import normalize_messages_input
from agent_framework._workflows._runner_context import MessageType
from agent_framework._workflows._state import State, _DeleteSentinel
from agent_framework._workflows._typing_utils import is_instance_of, try_coerce_to_type

__all__ = [
    "EdgeRunner",
    "InternalEdgeGroup",
    "MessageType",
    "State",
    "agent_context_filter",
    "agent_context_mode",
    "edge_condition",
    "ensure_trailing_user_turn",
    "gather_cancelling_siblings_on_error",
    "is_instance_of",
    "normalize_messages_input",
    "output_classifier",
    "pending_changes",
    "runner_context_of",
    "try_coerce_to_type",
]


def pending_changes(state: State) -> tuple[dict[str, Any], list[str]]:
    """A superstep's uncommitted writes (key to value) and deleted keys, each in the order they were made."""
    writes: dict[str, Any] = {}
    deletes: list[str] = []
    for key, value in state._pending.items():
        if value is _DeleteSentinel:
            deletes.append(key)
        else:
            writes[key] = value
    return writes, deletes


def output_classifier(workflow: Workflow) -> Callable[[str], Literal["output", "intermediate"] | None]:
    """The workflow's rule for an executor's yield: `output`, `intermediate`, or None (hidden)."""
    return workflow._output_designation.classify


def agent_context_mode(executor: AgentExecutor) -> str:
    """The agent node's `context_mode` (`full` when it was not set)."""
    return str(executor._context_mode)


def agent_context_filter(executor: AgentExecutor) -> Callable[[list[Any]], list[Any]] | None:
    """The agent node's `context_filter`, for `custom`."""
    return executor._context_filter


def ensure_trailing_user_turn(executor: AgentExecutor) -> bool:
    """Whether the agent node appends core's synthetic user turn after a trailing assistant message."""
    return bool(executor._ensure_trailing_user_turn)


def edge_condition(edge: Any) -> Callable[..., Any] | None:
    """The edge's condition, if it has one."""
    return getattr(edge, "_condition", None)


def runner_context_of(ctx: Any) -> Any:
    """The runner context a `WorkflowContext` runs in, or None for anything else."""
    return getattr(ctx, "_runner_context", None)
