"""Clocks for tests: time that a test sets, never today's date."""

from __future__ import annotations

# 2023-11-14T22:13:20Z: an arbitrary fixed start, far from any real date a test might run on.
EPOCH_MS = 1_700_000_000_000


class ManualClock:
    """A wall clock that moves only when the test moves it (or by `step_ms` on every reading)."""

    def __init__(self, start_ms: int = EPOCH_MS, *, step_ms: int = 0) -> None:
        self.ms = start_ms
        self.step_ms = step_ms

    def now_ms(self) -> int:
        now = self.ms
        self.ms += self.step_ms
        return now

    def advance(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)
