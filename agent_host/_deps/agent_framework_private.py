"""agent-framework-core's private agent, compaction and session names; nothing else imports `agent_framework._*`.

Checked on agent-framework-core 1.23.0 (requirements.txt allows >=1.23.0,<1.24). Core's workflow internals are in
agent_framework_workflows_private.py, so the conversation entity does not load core's workflow package. Each
assumption is pinned by a test of the same name in tests/deps/test_private_assumptions.py:

- `reconcile_compaction_summaries`: `_compaction._reconcile_compaction_summaries(source, working, source_ids)` merges
  the summaries a call-level compaction wrote into `source` in place, as core does after a non-streamed model call.
- `group_messages`: `_compaction.group_messages(messages)` returns the spans core's compaction groups messages into.
- `filter_new_messages`: `_sessions.filter_new_messages(existing, incoming)` returns what `incoming` adds after its
  ordered overlap with `existing`, as core's history providers store it.
- `response_finalizer`: `Agent._finalize_response_updates(updates, *, response_format=None)` builds a streamed
  run's response, and core calls it through the instance (so an instance attribute replaces it for one copy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_framework import Agent, AgentResponse
from agent_framework._compaction import _reconcile_compaction_summaries, group_messages
from agent_framework._sessions import filter_new_messages

__all__ = [
    "ResponseFinalizer",
    "filter_new_messages",
    "group_messages",
    "reconcile_compaction_summaries",
    "response_finalizer",
    "set_response_finalizer",
]

reconcile_compaction_summaries = _reconcile_compaction_summaries

ResponseFinalizer = Callable[..., AgentResponse[Any]]
"""`Agent._finalize_response_updates`: `(updates, *, response_format=None) -> AgentResponse`."""


def response_finalizer(agent: Agent) -> ResponseFinalizer:
    """The function that builds a streamed run's response from its updates, as bound to `agent`."""
    return agent._finalize_response_updates


def set_response_finalizer(agent: Agent, finalize: ResponseFinalizer) -> None:
    """Make `agent` (a per-run copy) build its streamed responses with `finalize`."""
    agent._finalize_response_updates = finalize  # type: ignore[method-assign]
