"""Conversations this process saw watched moments ago, so their next turns need not start the orchestration again.

A conversation in use takes turns seconds apart; each start would be refused (its orchestration runs) at the cost of
a request to the host and a read of its store. Within `RECENT_SECONDS` of a start that succeeded or was refused, a
turn skips it. That cannot miss an expiry: the orchestration deletes a conversation only after a TTL (a minute at
least) without activity, and the turn that put the conversation here was activity. What can end the orchestration
sooner is a DELETE, after which the conversation's next turn creates it anew, and a turn that created its conversation
always starts (starter.py); a DELETE through this process also forgets the conversation here. Keyed by the durable
host the client talks to as well, so apps in one process (tests) never share an entry. Knows no conversation state.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

import azure.durable_functions as df

from .._deps.durable_private import rpc_base_url, task_hub_name

RECENT_SECONDS = 60.0
# Bounded: the oldest entries go first (they would have aged out soonest).
MAX_RECENT = 10_000

_Key = tuple[str, str, str, str]


class RecentWatches:
    """The conversations whose expiry orchestration this process started, or found running, in the last minute."""

    def __init__(self, seconds: float = RECENT_SECONDS, limit: int = MAX_RECENT) -> None:
        self._seconds = seconds
        self._limit = limit
        self._seen: OrderedDict[_Key, float] = OrderedDict()
        self._lock = threading.Lock()

    def is_recent(self, client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str) -> bool:
        """Whether the conversation was seen watched within the window."""
        key = _key(client, entity_name, conversation_id)
        with self._lock:
            seen = self._seen.get(key)
            return seen is not None and time.monotonic() - seen < self._seconds

    def remember(self, client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str) -> None:
        """Note that the conversation's orchestration runs now."""
        key = _key(client, entity_name, conversation_id)
        with self._lock:
            self._seen[key] = time.monotonic()
            self._seen.move_to_end(key)
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)

    def forget(self, client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str) -> None:
        """Drop the conversation (it was deleted): its next turn starts the orchestration again."""
        with self._lock:
            if self._seen:  # with expiry off it stays empty: no key to build, so no read of the client's internals
                self._seen.pop(_key(client, entity_name, conversation_id), None)


def _key(client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str) -> _Key:
    return (rpc_base_url(client), task_hub_name(client), entity_name.lower(), conversation_id)


RECENT_WATCHES = RecentWatches()
