"""Starting a conversation's expiry orchestration from inside an orchestration (an orchestration agent's turn, a
workflow's agent node).

An orchestration cannot start another one without waiting for it, so it calls the `expiry_watch` activity, whose
durable client starts it as `starter.watch_conversation` does. Once per conversation and execution: the first turn
an execution takes in a conversation carries the activity with it (`AgentTask`), later ones do not. Which
conversations an execution has watched is rebuilt by every replay, so a replay schedules the same activities.
"""

from __future__ import annotations

import weakref
from typing import Any

import azure.durable_functions as df
from azure.durable_functions.models.Task import TaskBase

from .watcher import WatchInput

EXPIRY_ACTIVITY = "expiry_watch"
"""The activity that starts a conversation's expiry orchestration (its function has a durable client binding)."""

# The conversations each running orchestrator invocation has asked to watch; the context object lives for one
# invocation (one replay), so the set is rebuilt from scratch by each.
_WATCHED: weakref.WeakKeyDictionary[df.DurableOrchestrationContext, set[tuple[str, str]]] = weakref.WeakKeyDictionary()


def watch_task(
    context: df.DurableOrchestrationContext, entity_name: str, conversation_id: str, ttl_seconds: float
) -> TaskBase | None:
    """The activity task that starts the conversation's expiry orchestration, for the first turn this execution
    takes in it; None for later turns, or when the TTL is 0."""
    if ttl_seconds <= 0:
        return None
    watched = _WATCHED.setdefault(context, set())
    if (entity_name, conversation_id) in watched:
        return None
    watched.add((entity_name, conversation_id))
    watch = WatchInput(entity=entity_name, key=conversation_id, ttl_seconds=ttl_seconds)
    task: TaskBase = context.call_activity(EXPIRY_ACTIVITY, watch.wire())
    return task


def watch_input(payload: Any) -> WatchInput:
    """The activity's input as the model (it is the first input of the expiry orchestration)."""
    return WatchInput.model_validate(payload)
