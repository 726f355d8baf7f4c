"""Shifts the wall clock by CLOCK_SHIFT (e.g. `+3y` or `-40d`) to prove no test needs today's date.

CI runs the suite with this folder on PYTHONPATH, so the test process and every `python` it starts read a wall
clock years ahead or weeks behind. Only `time.time` and `time.time_ns` move; monotonic clocks are untouched.
"""

from __future__ import annotations

import os
import re
import time

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}


def _shift_seconds(text: str) -> int:
    match = re.fullmatch(r"([+-]?\d+)([smhdy])", text.strip())
    if match is None:
        raise SystemExit(f"CLOCK_SHIFT={text!r} must look like +3y, -40d, 90m or 3600s.")
    return int(match.group(1)) * _UNITS[match.group(2)]


_shift = os.environ.get("CLOCK_SHIFT")
if _shift:
    _seconds = _shift_seconds(_shift)
    _real_time, _real_time_ns = time.time, time.time_ns
    time.time = lambda: _real_time() + _seconds
    time.time_ns = lambda: _real_time_ns() + _seconds * 1_000_000_000
