"""Fault injection for the local host from the outside: wrappers around a scheduler's store.

The schedulers read and write through their ``store`` attribute at the moment each step needs it, so replacing it
with a wrapper puts a fault exactly where a crash or a duplicate delivery would happen, with no hook in production
code. A dropped write is a crash just before that commit: nothing is stored, and the work is delivered (or run)
again from what is still queued. Make a predicate hold a bounded number of times, or the work never progresses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

from agent_host._local_host import EntityScheduler, EntityStore, OrchestrationScheduler, OrchestrationStore, Signal
from agent_host._local_host.orchestration_store import EpisodeCommit
from agent_host._local_host.outbox import Message, OrchestrationEvent

EntityBatchFault = Callable[[str, str, list[Signal]], bool]
"""``(name, key, batch) -> True`` drops the commit of an entity batch that ran (its signals are delivered again)."""

DuplicateDelivery = Callable[[str, str, Signal], bool]
"""``(name, key, signal) -> True`` puts the signal into its batch twice."""

EpisodeFault = Callable[[str, EpisodeCommit], bool]
"""``(instance_id, commit) -> True`` drops an episode's commit (the same inbox is delivered again)."""

ActivityFault = Callable[[int], bool]
"""``(activity_seq) -> True`` drops the outcome of an activity that ran (it is still queued, so it runs again)."""


class _Delegating:
    """Everything not overridden goes to the wrapped store."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FaultyEntityStore(_Delegating):
    """An entity store that can drop batch commits and deliver signals twice."""

    def __init__(
        self,
        inner: EntityStore,
        *,
        crash_before_commit: EntityBatchFault | None = None,
        deliver_twice: DuplicateDelivery | None = None,
    ) -> None:
        super().__init__(inner)
        self._crash_before_commit = crash_before_commit
        self._deliver_twice = deliver_twice
        self._lock = threading.Lock()
        self._read: dict[tuple[str, str], list[Signal]] = {}  # the signals each entity's current batch was built from

    def pending(self, name: str, key: str, limit: int) -> list[Signal]:
        signals: list[Signal] = self._inner.pending(name, key, limit)
        with self._lock:
            self._read[(name, key)] = signals
        if self._deliver_twice is None:
            return signals
        delivered: list[Signal] = []
        for signal in signals:
            delivered.append(signal)
            if self._deliver_twice(name, key, signal):
                delivered.append(signal)
        return delivered

    def commit_batch(
        self, name: str, key: str, state: str | None, done_through_seq: int, messages: Sequence[Message]
    ) -> None:
        with self._lock:
            batch = [signal for signal in self._read.get((name, key), []) if signal.seq <= done_through_seq]
        if self._crash_before_commit is not None and self._crash_before_commit(name, key, batch):
            return
        self._inner.commit_batch(name, key, state, done_through_seq, messages)


class FaultyOrchestrationStore(_Delegating):
    """An orchestration store that can drop episode commits and activity outcomes."""

    def __init__(
        self,
        inner: OrchestrationStore,
        *,
        crash_before_commit: EpisodeFault | None = None,
        crash_after_activity: ActivityFault | None = None,
    ) -> None:
        super().__init__(inner)
        self._crash_before_commit = crash_before_commit
        self._crash_after_activity = crash_after_activity

    def commit_episode(self, commit: EpisodeCommit) -> None:
        if self._crash_before_commit is not None and self._crash_before_commit(commit.instance_id, commit):
            return
        self._inner.commit_episode(commit)

    def complete_activity(self, seq: int, completion: OrchestrationEvent) -> bool:
        if self._crash_after_activity is not None and self._crash_after_activity(seq):
            return True  # as far as the scheduler knows it was recorded; the row still queued makes it run again
        return bool(self._inner.complete_activity(seq, completion))


def crash_before_entity_commit(scheduler: EntityScheduler, when: EntityBatchFault) -> None:
    """Drop the commit of every entity batch for which `when` holds, as if the process died just before it."""
    scheduler.store = cast(EntityStore, FaultyEntityStore(scheduler.store, crash_before_commit=when))


def deliver_twice(scheduler: EntityScheduler, when: DuplicateDelivery) -> None:
    """Put every signal for which `when` holds into its batch twice, as a duplicate delivery would."""
    scheduler.store = cast(EntityStore, FaultyEntityStore(scheduler.store, deliver_twice=when))


def crash_before_episode_commit(scheduler: OrchestrationScheduler, when: EpisodeFault) -> None:
    """Drop the commit of every episode for which `when` holds, as if the process died just before it."""
    scheduler.store = cast(OrchestrationStore, FaultyOrchestrationStore(scheduler.store, crash_before_commit=when))


def crash_after_activity(scheduler: OrchestrationScheduler, when: ActivityFault) -> None:
    """Drop the outcome of every activity for which `when` holds, as if the process died after it ran."""
    scheduler.store = cast(OrchestrationStore, FaultyOrchestrationStore(scheduler.store, crash_after_activity=when))
