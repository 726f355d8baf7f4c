"""Entity operation scheduling for the local host: one batch at a time per entity, entities in parallel.

Mirrors what the Durable Functions extension does for entities: queued signals become batches, the entity function
runs on a worker thread, and the new state plus the removal of the consumed signals commit in one transaction, with
the responses the batch owes orchestrations that called it and the signals it sends other entities.
A failing store is not a failing entity: its errors are retried and never dead-letter a signal. Draining, backoff and
commit retry are the keyed work engine's (``work_engine``); this module knows batches.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .._clock import SYSTEM_CLOCK, Clock
from .log_text import entity_label, loggable
from .orchestration_protocol import entity_response_event
from .outbox import EntityRequest, InboxKind, Message, OrchestrationEvent
from .store import EntityStore, Signal
from .work_engine import Backoff, IdleSignal, KeyedWorkEngine, Step, StorageFailure

logger = logging.getLogger(__name__)

EntityFunction = Callable[[str], Any]
"""An entity function as registered on the app: takes the batch request JSON text, returns the response JSON text."""

DEFAULT_MAX_BATCH_SIZE = 50
"""Most operations per entity batch when host.json does not set ``maxEntityOperationBatchSize``: the Durable
extension's default on the Consumption plan (5000 elsewhere), and the default the published host.json schema states."""


@dataclass(frozen=True)
class EntitySchedulerOptions:
    """The entity scheduler's tuning knobs.

    Attributes:
        max_batch_size: Most signals handed to the entity function in one call and committed together.
        max_workers: Most entities processed at the same time.
        max_attempts: Failed attempts (entity function raised) after which a signal is dead-lettered.
        retry_backoff_seconds: Delay before the first retry of a failed entity function; doubles per further
            failure, capped at ``max_backoff_seconds``.
        storage_backoff_seconds: Delay before the first retry after a storage error; doubles per further failure,
            capped at ``max_backoff_seconds``.
        max_backoff_seconds: Longest delay between two retries.
    """

    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_workers: int = 8
    max_attempts: int = 3
    retry_backoff_seconds: float = 0.2
    storage_backoff_seconds: float = 0.1
    max_backoff_seconds: float = 5.0

    def __post_init__(self) -> None:
        """Refuse sizes and counts that are not positive."""
        if self.max_batch_size < 1 or self.max_workers < 1 or self.max_attempts < 1:
            raise ValueError("max_batch_size, max_workers and max_attempts must be at least 1")


OrchestrationNotice = Callable[[str], None]
"""Told the id of an orchestration whose inbox an entity batch just wrote a response to."""

Entity = tuple[str, str]
"""An entity as the scheduler keys it: ``(lower-cased name, key)``."""


@dataclass(frozen=True)
class _Outcome:
    """What a batch produced and has not committed yet: the entity's new state, the last signal it consumed, and the
    responses and signals it sends."""

    state: str | None
    done_through_seq: int
    operations: int
    messages: tuple[Message, ...] = ()


@dataclass(frozen=True)
class _BatchResponse:
    """The entity function's answer to a batch: whether the entity exists, its state, one result per operation, and
    the signals it sends other entities."""

    exists: bool
    state: str | None
    results: list[dict[str, Any]]
    signals: list[dict[str, Any]]


@dataclass
class _Retries:
    """One drain's memory of a failing entity function: signals up to ``isolate_through`` run one at a time, and the
    head signal ``failing_seq`` has failed ``failures`` times."""

    isolate_through: int = 0
    failing_seq: int = 0
    failures: int = 0


class EntityScheduler:
    """Runs queued entity signals through the app's entity functions, on the keyed work engine (``work_engine``).

    Guarantees: operations on one entity never overlap and run in queue order; different entities run in parallel on
    a bounded thread pool (entity functions are synchronous and may block for a long time); delivery is at least
    once, because signals are removed only in the transaction that stores the state they produced.

    A storage error is never an entity error. When the store fails before the entity function ran, nothing ran and
    the entity is retried with capped exponential backoff. When it fails while committing, the entity function's
    output is kept and only the commit is retried, with the same backoff and without limit: the model behind an
    operation never runs again because a disk was full, and no signal is dead-lettered for it. Meanwhile
    :meth:`storage_failure` says why the entity is stuck, so readers can answer 503 instead of "still pending".

    Every read and write goes through ``store`` at the moment it happens, which is the seam for fault injection: a
    test replaces ``store`` with a wrapper that drops a commit (a crash before it) or returns a signal twice (a
    duplicate delivery); see ``tests/faults.py``.
    """

    def __init__(
        self,
        store: EntityStore,
        entity_functions: Mapping[str, EntityFunction],
        options: EntitySchedulerOptions | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """Create a scheduler; nothing runs until :meth:`start`.

        Args:
            store: Where states and pending signals live.
            entity_functions: Entity function per lower-cased entity name.
            options: Batch size, workers, attempts and backoff; the defaults when None.
            clock: Where the time of a response or signal the entity sends comes from.
        """
        self.store = store
        self.on_orchestration_message: OrchestrationNotice | None = None
        self._options = options or EntitySchedulerOptions()
        self._clock = clock
        self._functions: dict[str, EntityFunction] = {name.lower(): fn for name, fn in entity_functions.items()}
        self._retry_backoff = Backoff(self._options.retry_backoff_seconds, self._options.max_backoff_seconds)
        self._engine: KeyedWorkEngine[Entity] = KeyedWorkEngine(
            self._open_drain,
            name="an EntityScheduler",
            label=lambda entity: entity_label(*entity),
            storage_backoff=Backoff(self._options.storage_backoff_seconds, self._options.max_backoff_seconds),
            idle=IdleSignal(),
        )
        self._lock = threading.Lock()
        self._warned_unknown: set[str] = set()

    @property
    def entity_names(self) -> frozenset[str]:
        """The lower-cased names of the entities this scheduler can run."""
        return frozenset(self._functions)

    def storage_failure(self, name: str, key: str) -> StorageFailure | None:
        """Tell why an entity is stuck on its store, if it is.

        Args:
            name: Lower-cased entity name.
            key: Entity key.

        Returns:
            The failure, while the entity's last attempt to read, run or commit failed on the store; None otherwise.
        """
        return self._engine.storage_failure((name, key))

    def start(self) -> None:
        """Start the worker pool and schedule every entity that already has pending signals.

        Raises:
            RuntimeError: If the scheduler was started before.
        """
        self._engine.start(ThreadPoolExecutor(self._options.max_workers, thread_name_prefix="entity-worker"))
        for name, key in self.store.entities_with_pending():
            self.schedule(name, key)

    def stop(self) -> None:
        """Stop taking new batches and wait for the batches in flight to finish and commit.

        Blocks; call it from a thread (``asyncio.to_thread``) when on an event loop. Signals still queued stay in the
        store and are processed by the next scheduler started on it.
        """
        self._engine.stop()
        self._engine.join()

    def schedule(self, name: str, key: str) -> None:
        """Make sure the entity's pending signals get processed.

        Cheap and thread-safe; call it after every enqueue. If a batch for the entity is running, the new signals
        wait for the next batch.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
        """
        if name not in self._functions:
            with self._lock:
                first = name not in self._warned_unknown
                self._warned_unknown.add(name)
            if first:
                logger.warning("no entity function named %r in the app; its signals stay queued", name)
            return
        self._engine.schedule((name, key))

    def is_idle(self) -> bool:
        """Tell whether nothing is running and no signal for a known entity is waiting.

        Returns:
            True when idle. Signals for entity names the app does not define are ignored.
        """
        if self._engine.is_busy():
            return False
        return all(name not in self._functions for name, _ in self.store.entities_with_pending())

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until :meth:`is_idle` holds, woken each time a batch finishes.

        Args:
            timeout: Seconds to wait at most.

        Raises:
            TimeoutError: If the scheduler is still busy after ``timeout`` seconds.
        """
        await self._engine.idle.wait_until(self.is_idle, timeout, "entity scheduler")

    def _open_drain(self, entity: Entity) -> Step:
        """The step of one drain of an entity's queue, with its own retry memory."""
        retries = _Retries()
        return lambda: self._step(entity, retries)

    def _step(self, entity: Entity, retries: _Retries) -> bool:
        """Run and commit the entity's next batch.

        Args:
            entity: ``(name, key)``.
            retries: This drain's memory of a failing operation.

        Returns:
            True when a batch ran (or failed, or was dead-lettered), False when nothing is pending or the scheduler
            stopped with an uncommitted outcome (its signals stay queued for the next start).

        Raises:
            StorageError: The store failed before anything ran, or while dead-lettering (the signal stays queued
                and is tried, and dead-lettered, again).
        """
        name, key = entity
        signals = self.store.pending(name, key, self._options.max_batch_size)
        state = self.store.read_state(name, key) if signals else None
        self._engine.storage_recovered(entity)
        if not signals:
            return False
        if signals[0].seq <= retries.isolate_through:
            signals = signals[:1]
        try:
            outcome = self._run_batch(name, key, signals, state)
        except Exception:
            logger.exception("entity function for %s failed on a batch of %d", entity_label(name, key), len(signals))
            retries.isolate_through = max(retries.isolate_through, signals[-1].seq)
            head = signals[0]
            retries.failures = retries.failures + 1 if retries.failing_seq == head.seq else 1
            retries.failing_seq = head.seq
            if len(signals) == 1 and retries.failures >= self._options.max_attempts:
                self._dead_letter(head, retries.failures)
                retries.failing_seq, retries.failures = 0, 0
                return True
            self._engine.pause(self._retry_backoff.delay(retries.failures))
            return True
        return self._commit(name, key, outcome)

    def _run_batch(self, name: str, key: str, signals: list[Signal], state: str | None) -> _Outcome:
        """Run one batch through the entity function.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            signals: The batch, in queue order.
            state: The entity's stored state, or None when it does not exist.

        Returns:
            The outcome to commit.

        Raises:
            Exception: Whatever the entity function raised, or ValueError for a malformed response.
        """
        raw = self._functions[name](_batch_json(name, key, state, signals))
        if asyncio.iscoroutine(raw):
            raw = asyncio.run(raw)
        response = _parse_response(raw, signals, name, key)
        messages = self._responses(signals, response.results) + self._signals_sent(name, key, response.signals)
        return _Outcome(response.state if response.exists else None, signals[-1].seq, len(signals), tuple(messages))

    def _responses(self, batch: list[Signal], results: list[dict[str, Any]]) -> list[Message]:
        """The response each call in the batch owes the orchestration that made it (once, even if delivered twice).

        Args:
            batch: The operations, in the order the entity function ran them.
            results: One result per operation.

        Returns:
            EventRaised responses for the callers' inboxes.
        """
        now = self._clock.now_ms()
        answered: set[str] = set()
        messages: list[Message] = []
        for signal, result in zip(batch, results, strict=False):
            if signal.request_id is None or signal.parent_instance_id is None or signal.request_id in answered:
                continue
            answered.add(signal.request_id)
            event = entity_response_event(
                signal.request_id, str(result.get("result")), failed=bool(result.get("isError")), at_ms=now
            )
            messages.append(
                OrchestrationEvent(
                    signal.parent_instance_id, signal.parent_execution_id, InboxKind.COMPLETION, event, now, now
                )
            )
        return messages

    def _signals_sent(self, name: str, key: str, signals: list[dict[str, Any]]) -> list[Message]:
        """Queue the signals an entity function sent other entities (``{"target": {"name", "key"}, "name", "input"}``).

        Args:
            name: The sending entity's name.
            key: Its key.
            signals: The ``signals`` of its response.

        Returns:
            Operations for the targets' queues; a signal to an entity the app does not define is logged and dropped.
        """
        now = self._clock.now_ms()
        messages: list[Message] = []
        for sent in signals:
            target = sent.get("target") if isinstance(sent, dict) else None
            target_name = str(target.get("name") or "").lower() if isinstance(target, dict) else ""
            target_key = str(target.get("key") or "") if isinstance(target, dict) else ""
            if target_name not in self._functions or not target_key or not sent.get("name"):
                logger.error(
                    "entity %s sent a signal that cannot be delivered (no such entity, key or operation): %s",
                    entity_label(name, key),
                    loggable(json.dumps(sent)),
                )
                continue
            messages.append(EntityRequest(target_name, target_key, str(sent["name"]), sent.get("input"), now))
        return messages

    def _commit(self, name: str, key: str, outcome: _Outcome) -> bool:
        """Store a batch's outcome, retrying only the commit for as long as the store fails.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            outcome: What the batch produced.

        Returns:
            True once stored; False when the scheduler stopped first (the outcome is dropped, its signals stay
            queued and run again on the next start).
        """

        def write() -> bool:
            self.store.commit_batch(name, key, outcome.state, outcome.done_through_seq, outcome.messages)
            return True

        if not self._engine.keep_committing((name, key), write):
            logger.error(
                "stopping before the outcome of %d operation(s) on %s could be stored; their signals "
                "stay queued and run again on the next start",
                outcome.operations,
                entity_label(name, key),
            )
            return False
        self._announce(outcome.messages)
        return True

    def _announce(self, messages: tuple[Message, ...] | list[Message]) -> None:
        """After a commit, wake whoever the committed messages are for.

        Args:
            messages: The messages just stored.
        """
        for message in messages:
            if isinstance(message, EntityRequest):
                self.schedule(message.name, message.key)
            elif isinstance(message, OrchestrationEvent) and self.on_orchestration_message is not None:
                self.on_orchestration_message(message.instance_id)

    def _dead_letter(self, signal: Signal, attempts: int) -> None:
        """Drop a signal that keeps failing, recording it in one error log line: ids and sizes, never its input.

        The input is what the caller sent (a user's message); the log is not the place for it.

        Args:
            signal: The signal to drop.
            attempts: How many attempts failed.
        """
        record = {
            "name": signal.name,
            "key": signal.key,
            "seq": signal.seq,
            "operation": signal.operation,
            "inputBytes": len(signal.input.encode("utf-8")) if signal.input is not None else 0,
            "enqueuedAt": signal.enqueued_at,
        }
        logger.error("dead-letter after %d failed attempts: %s", attempts, json.dumps(record))
        # An orchestration waiting for this call still gets an answer: a failure, or it would wait forever.
        failure = {
            "isError": True,
            "result": json.dumps(
                f"The entity operation {signal.operation!r} on "
                f"@{signal.name}@{signal.key} failed {attempts} times and was dead-lettered; see the host log."
            ),
        }
        messages = self._responses([signal], [failure])
        self.store.discard_signals(signal.name, signal.key, [signal.seq], messages)
        self._announce(messages)


def _parse_response(raw: Any, batch: list[Signal], name: str, key: str) -> _BatchResponse:
    """Validate the entity function's response and log failed operations.

    Args:
        raw: What the entity function returned (JSON text expected).
        batch: The operations that were sent, to name failed ones.
        name: Lower-cased entity name.
        key: Entity key.

    Returns:
        The response; a state of None for an existing entity is stored as ``"null"``.

    Raises:
        ValueError: If the response is not the expected JSON object.
    """
    if not isinstance(raw, str | bytes | bytearray):
        raise ValueError(f"entity function returned {type(raw).__name__}, expected JSON text")
    response = json.loads(raw)
    if not isinstance(response, dict):
        raise ValueError("entity function response is not a JSON object")
    state = response.get("entityState")
    if state is not None and not isinstance(state, str):
        raise ValueError("entityState in the entity function response is not a string")
    results = [r if isinstance(r, dict) else {} for r in response.get("results") or []]
    for signal, result in zip(batch, results, strict=False):
        if result.get("isError"):
            logger.warning(
                "operation %r on %s failed: %s",
                signal.operation,
                entity_label(name, key),
                loggable(str(result.get("result"))),
            )
    signals = response.get("signals") or []
    exists = bool(response.get("entityExists"))
    return _BatchResponse(
        exists=exists,
        state=(state if state is not None else "null") if exists else None,
        results=results,
        signals=signals if isinstance(signals, list) else [],
    )


def signal_body(payload: Any) -> str:
    """The body text `DurableOrchestrationClient.signal_entity` posts for `payload`: JSON of its JSON.

    The client encodes the input once and aiohttp encodes that string again; the host forwards the body as the
    operation's input, which is why entity inputs arrive JSON-encoded twice.
    """
    return json.dumps(json.dumps(payload))


def entity_batch_json(name: str, key: str, state: str | None, batch: Sequence[tuple[str, str | None]]) -> str:
    """The JSON the Functions host hands an entity function: its identity, stored state and signalled operations.

    Args:
        name: The entity name (lower-case, as the host keeps it).
        key: The entity key.
        state: The stored state string, or None when the entity does not exist.
        batch: (operation name, signal body text) pairs in delivery order.
    """
    return _request_json(name, key, state, [_operation(operation, text, is_signal=True) for operation, text in batch])


def _batch_json(name: str, key: str, state: str | None, batch: Sequence[Signal]) -> str:
    """The batch JSON for queued operations: signals, and calls from orchestrations (``isSignal`` false, their id).

    Args:
        name: The entity name.
        key: The entity key.
        state: The stored state string, or None.
        batch: The operations in delivery order.
    """
    operations = [
        _operation(signal.operation, signal.input, is_signal=signal.request_id is None, request_id=signal.request_id)
        for signal in batch
    ]
    return _request_json(name, key, state, operations)


def _operation(operation: str, text: str | None, *, is_signal: bool, request_id: str | None = None) -> dict[str, Any]:
    """One operation of a batch, with the extension's field names (``name``, ``input``, ``isSignal``, ``id``)."""
    item: dict[str, Any] = {"name": operation, "input": text, "isSignal": is_signal}
    if request_id is not None:
        item["id"] = request_id
    return item


def _request_json(name: str, key: str, state: str | None, operations: list[dict[str, Any]]) -> str:
    """The whole batch request."""
    return json.dumps(
        {"self": {"name": name, "key": key}, "exists": state is not None, "state": state, "batch": operations}
    )
