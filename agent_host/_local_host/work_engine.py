"""The keyed work engine under the local host's schedulers: per-key serial draining, storage backoff, commit retry.

Entity batches, orchestration episodes and activities are all "drain a key until nothing is left": one worker at a
time per key, keys in parallel on a thread pool, storage errors retried with capped backoff, outcomes committed until
the store takes them, idle waiters woken by notification. This module holds that machine once; it knows nothing about
entities, orchestrations or what a step does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Generic, TypeVar

from .store import StorageError

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

Step = Callable[[], bool]
"""One step of a key's work: True when it made progress (the engine runs it again at once), False when nothing is left.
A :class:`StorageError` it raises means nothing it did matters: the engine backs off and runs it again."""


@dataclass(frozen=True)
class Backoff:
    """A capped exponential delay between retries.

    Attributes:
        first_seconds: Delay after the first failure; doubles per further failure.
        max_seconds: Longest delay.
    """

    first_seconds: float
    max_seconds: float = 5.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (at least 1)."""
        return min(self.first_seconds * 2 ** min(failures - 1, 30), self.max_seconds)


@dataclass(frozen=True)
class StorageFailure:
    """Why a key cannot make progress: the store failed while its work was read, run or committed.

    Attributes:
        cause: What the store said, e.g. ``database or disk is full``.
        holding_outcome: True when work ran and its outcome waits in memory for the store to accept it.
    """

    cause: str
    holding_outcome: bool


class IdleSignal:
    """Wakes coroutines waiting for a scheduler to go idle, each time work under it finishes (no polling).

    Shared by every engine of one scheduler, so a waiter re-checks the scheduler's whole idle condition.
    """

    def __init__(self) -> None:
        """Start with no waiters."""
        self._lock = threading.Lock()
        self._waiters: dict[asyncio.Future[None], asyncio.AbstractEventLoop] = {}

    def notify(self) -> None:
        """Wake every waiter (from any thread); each re-checks its condition."""
        with self._lock:
            waiters, self._waiters = self._waiters, {}
        for future, loop in waiters.items():
            with contextlib.suppress(RuntimeError):  # the waiter's loop closed after it stopped waiting
                loop.call_soon_threadsafe(_resolve, future)

    async def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Return once ``condition()`` holds, checking it again after every notification.

        Args:
            condition: The idle condition.
            timeout: Seconds to wait at most.
            what: Who is waited for, for the error message.

        Raises:
            TimeoutError: If ``condition()`` still does not hold after ``timeout`` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            future: asyncio.Future[None] = loop.create_future()
            # Registered before the check, so work that finishes between the check and the wait still wakes it.
            with self._lock:
                self._waiters[future] = loop
            try:
                if condition():
                    return
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError(f"{what} still busy after {timeout} s")
                await asyncio.wait([future], timeout=remaining)
            finally:
                with self._lock:
                    self._waiters.pop(future, None)


def _resolve(future: asyncio.Future[None]) -> None:
    """Complete a waiter's future unless it is done already."""
    if not future.done():
        future.set_result(None)


class KeyedWorkEngine(Generic[K]):
    """Drains work per key: at most one drain per key at a time, different keys in parallel on an executor.

    :meth:`schedule` is cheap and thread-safe: it starts a drain for an idle key, or marks a busy key dirty so its
    drain takes one more look before it ends, so work stored while a step ran is never left behind. A drain runs its
    step until the step reports no progress; a :class:`StorageError` from the step is retried with backoff and
    recorded (:meth:`storage_failure`) until the store answers again.
    """

    def __init__(
        self,
        open_drain: Callable[[K], Step],
        *,
        name: str,
        label: Callable[[K], str],
        storage_backoff: Backoff,
        idle: IdleSignal,
    ) -> None:
        """Create an engine; nothing runs until :meth:`start`.

        Args:
            open_drain: Gives the step for one drain of a key (a fresh one per drain, so it can hold retry state).
            name: What the engine serves, for error messages, e.g. ``an EntityScheduler``.
            label: A key as the log names it.
            storage_backoff: Delays between retries after storage errors.
            idle: Notified whenever a drain ends.
        """
        self.idle = idle
        self._open_drain = open_drain
        self._name = name
        self._label = label
        self._storage_backoff = storage_backoff
        self._lock = threading.Lock()
        self._active: set[K] = set()
        self._dirty: set[K] = set()
        self._storage_failures: dict[K, StorageFailure] = {}
        self._executor: Executor | None = None
        self._stopping = threading.Event()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopping.is_set()

    def start(self, executor: Executor) -> None:
        """Start draining scheduled keys on ``executor``, which the engine shuts down in :meth:`join`.

        Raises:
            RuntimeError: If the engine was started before.
        """
        with self._lock:
            if self._executor is not None or self._stopping.is_set():
                raise RuntimeError(f"{self._name} can be started only once")
            self._executor = executor

    def stop(self) -> None:
        """Stop starting drains and steps; running steps finish (waits and commit retries end early)."""
        self._stopping.set()

    def join(self) -> None:
        """Wait for the running drains to end (after :meth:`stop`). Blocks."""
        with self._lock:
            executor = self._executor
        if executor is not None:
            executor.shutdown(wait=True)

    def pause(self, seconds: float) -> None:
        """Sleep in a step for up to ``seconds``, less if the engine stops meanwhile."""
        self._stopping.wait(seconds)

    def schedule(self, key: K) -> None:
        """Make sure the key's work gets looked at.

        Args:
            key: The key.
        """
        with self._lock:
            if self._executor is None or self._stopping.is_set():
                return
            if key in self._active:
                self._dirty.add(key)
                return
            self._active.add(key)
            self._executor.submit(self._drain, key)

    def is_busy(self) -> bool:
        """Whether any drain is running or about to."""
        with self._lock:
            return bool(self._active)

    def storage_failure(self, key: K) -> StorageFailure | None:
        """Tell why a key is stuck on its store, if it is: set while its last read, run or commit failed there."""
        with self._lock:
            return self._storage_failures.get(key)

    def storage_recovered(self, key: K) -> None:
        """Forget a key's storage failure once the store answered again."""
        with self._lock:
            self._storage_failures.pop(key, None)

    def keep_committing(self, key: K, write: Callable[[], bool]) -> bool:
        """Run ``write`` until the store takes it, backing off while it fails; the work it stores never runs again.

        Args:
            key: Whose outcome it is.
            write: Stores the outcome; returns whether it was stored (False: refused, e.g. its owner is gone).

        Returns:
            What ``write`` returned once it ran; False when the engine stopped before the store took it.
        """
        attempts = 0
        while True:
            try:
                stored = write()
            except StorageError as exc:
                attempts += 1
                self._note_storage_failure(key, exc, attempts, holding_outcome=True)
                if self._stopping.is_set():
                    return False
                self._stopping.wait(self._storage_backoff.delay(attempts))
                continue
            if attempts:
                logger.warning("stored the outcome for %s after %d failed commits", self._label(key), attempts)
            self.storage_recovered(key)
            return stored

    def _drain(self, key: K) -> None:
        """Worker body: run the key's step until it has nothing left (or the engine stops)."""
        released = False
        storage_failures = 0
        try:
            step = self._open_drain(key)
            while not self._stopping.is_set():
                with self._lock:
                    self._dirty.discard(key)
                try:
                    progressed = step()
                except StorageError as exc:  # nothing that matters ran: the same step runs again later
                    storage_failures += 1
                    self._note_storage_failure(key, exc, storage_failures, holding_outcome=False)
                    self._stopping.wait(self._storage_backoff.delay(storage_failures))
                    continue
                if storage_failures:
                    storage_failures = 0
                    self.storage_recovered(key)
                if progressed:
                    continue
                with self._lock:
                    if key in self._dirty:
                        continue
                    # Released under the same lock as the dirty check, so a schedule() from now on starts a new
                    # drain; releasing again later would take the key from that drain and let a third run beside it.
                    self._active.discard(key)
                    released = True
                    return
        except BaseException:
            logger.exception("worker for %s stopped unexpectedly; its work stays stored", self._label(key))
        finally:
            if not released:
                with self._lock:
                    self._active.discard(key)
                    self._dirty.discard(key)
            self.idle.notify()

    def _note_storage_failure(self, key: K, exc: StorageError, attempts: int, *, holding_outcome: bool) -> None:
        """Record and log why a key is stuck on its store."""
        with self._lock:
            self._storage_failures[key] = StorageFailure(exc.cause, holding_outcome)
        kept = "keeping the outcome and retrying the commit" if holding_outcome else "retrying; nothing ran"
        level = logging.ERROR if attempts == 1 else logging.WARNING
        logger.log(level, "storage failure %d for %s (%s): %s", attempts, self._label(key), kept, exc)
