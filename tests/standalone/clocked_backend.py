"""durabletask's in-memory backend on a test's clock: a signal an entity schedules for later waits until the test
moves the clock past its time, instead of a thread sleeping on the machine's clock."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from clocks import ManualClock
from durabletask.testing import InMemoryOrchestrationBackend

IDLE_TIMEOUT_SECONDS = 30.0
_POLL_SECONDS = 0.005


@dataclass(frozen=True)
class DelayedSignal:
    """An entity operation signalled for later: when (ms by the test clock), to which entity, and its input."""

    at_ms: int
    entity_id: str
    operation: str
    input_value: str | None


class ClockedBackend(InMemoryOrchestrationBackend):
    """The in-memory backend, its delayed entity signals (those entities send, as the worker's idle checks are)
    delivered by `advance` once the test clock reaches their time. Other timers keep the backend's own behaviour.

    Args:
        clock: The clock the worker under test reads too.
        port: Where the backend listens.
    """

    def __init__(self, clock: ManualClock, port: int) -> None:
        super().__init__(port=port)
        self.clock = clock
        self._delayed: list[DelayedSignal] = []

    def _signal_entity_internal(
        self,
        entity_id: str,
        operation: str,
        input_value: str | None = None,
        scheduled_time: datetime | None = None,
    ) -> None:
        if scheduled_time is None:
            super()._signal_entity_internal(entity_id, operation, input_value)
            return
        at_ms = int(scheduled_time.timestamp() * 1000)
        with self._lock:
            self._delayed.append(DelayedSignal(at_ms, entity_id, operation, input_value))

    def reset(self) -> None:
        with self._lock:
            self._delayed.clear()
        super().reset()

    def delayed(self) -> list[DelayedSignal]:
        """The signals waiting for their time, earliest first."""
        with self._lock:
            return sorted(self._delayed, key=lambda signal: signal.at_ms)

    def advance(self, seconds: float) -> None:
        """Move the clock on, deliver the signals now due, and wait until the entities have run them."""
        self.clock.advance(seconds)
        with self._lock:
            due = sorted((s for s in self._delayed if s.at_ms <= self.clock.ms), key=lambda signal: signal.at_ms)
            self._delayed = [s for s in self._delayed if s.at_ms > self.clock.ms]
            for signal in due:
                super()._signal_entity_internal(signal.entity_id, signal.operation, signal.input_value)
        self.wait_idle()

    def wait_idle(self) -> None:
        """Wait until no entity has an operation queued or running.

        Raises:
            TimeoutError: still busy after `IDLE_TIMEOUT_SECONDS`.
        """
        deadline = time.monotonic() + IDLE_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            with self._lock:
                busy = self._entity_in_flight or any(e.pending_operations for e in self._entities.values())
            if not busy:
                return
            time.sleep(_POLL_SECONDS)
        raise TimeoutError(f"entities still busy after {IDLE_TIMEOUT_SECONDS:g} s")
