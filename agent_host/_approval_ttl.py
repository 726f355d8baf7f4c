"""How long a pending tool approval waits for its answer: the setting's checks for `add_agent(approval_ttl=...)` and
a turn's `approvalTtlSeconds`. Knows nothing of how expiry is applied (`_conversation/approvals.py`).
"""

from __future__ import annotations

import datetime
import math

# No lifetime: the approval waits until it is answered (the default, and what 0 asks for).
APPROVAL_TTL_OFF = 0.0
# A year: longer than any conversation is kept by default, and far from the end of what the clock's milliseconds hold.
MAX_APPROVAL_TTL_SECONDS = 365 * 24 * 60 * 60.0


def approval_ttl_problem(seconds: float) -> str | None:
    """Why `seconds` is not an approval lifetime, or None when it is one (0 for none)."""
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_APPROVAL_TTL_SECONDS:
        return (
            f"must be a number of seconds from 0 (approvals wait until answered) to {MAX_APPROVAL_TTL_SECONDS:.0f} "
            "(a year)"
        )
    return None


def approval_ttl_seconds_of(value: datetime.timedelta | float, source: str) -> float:
    """The approval lifetime in seconds given in code: a `timedelta` or a number of seconds (0 for none).

    Raises:
        ValueError: the value is of another type, negative, not finite or over a year; the message names `source`.
    """
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValueError(f"{source} must be a timedelta or a number of seconds, got {type(value).__name__}.")
    problem = approval_ttl_problem(seconds)
    if problem is not None:
        raise ValueError(f"{source}={value!r} {problem}.")
    return seconds
