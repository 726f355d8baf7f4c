"""The one place that says what time it is: wall-clock milliseconds for records, TTLs, turn ids and queues.

Everything that stores or compares a wall-clock time asks a `Clock`, so tests (and a shifted CI run) can set the
time instead of depending on today's date. Durations and timeouts use `time.monotonic`, which no clock changes.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of wall-clock time."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """The machine's wall clock."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch, from `time.time_ns`."""
        return time.time_ns() // 1_000_000


SYSTEM_CLOCK = SystemClock()
