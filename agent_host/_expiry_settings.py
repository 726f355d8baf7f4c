"""How long an idle conversation is kept: the setting's format, its default, and its validation for each entry point.

The app setting (`AGENT_HOST_CONVERSATION_TTL`), `HostSettings(conversation_ttl_seconds=...)` and
`add_agent(conversation_ttl=...)` all end up as a number of seconds checked here; each names itself in its errors.
Knows nothing of how expiry is carried out.
"""

from __future__ import annotations

import datetime
import math
import re

# 14 days, as the .NET durable agents host: long enough that a user back from two weeks away finds the
# conversation, short enough that abandoned conversations stop costing storage (docs/retention.md says more).
DEFAULT_CONVERSATION_TTL_SECONDS = 14 * 24 * 60 * 60.0
# Shorter than this, a conversation could be deleted between two turns of one sitting, and every conversation's
# expiry orchestration would wake more often than its turns run.
MIN_CONVERSATION_TTL_SECONDS = 60.0
# Expiry is off: no conversation is deleted for being idle.
TTL_OFF = 0.0

_UNITS = {"s": 1, "m": 60, "h": 60 * 60, "d": 24 * 60 * 60}
_DURATION = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)", re.IGNORECASE)
_FORMAT_HINT = "seconds (1209600), or a number with s, m, h or d (14d, 36h, 90m); 0 turns expiry off"


def ttl_from_setting(raw: str, setting: str) -> float:
    """The TTL in seconds an app setting asks for (`TTL_OFF` for `0`).

    Raises:
        ValueError: the value is not a duration, or is neither 0 nor at least `MIN_CONVERSATION_TTL_SECONDS`;
            the message names the setting and shows the value.
    """
    match = _DURATION.fullmatch(raw.strip())
    if match is None:
        raise ValueError(f"App setting {setting}={raw!r} is not a duration: use {_FORMAT_HINT}.")
    seconds = float(match["number"]) * _UNITS[(match["unit"] or "s").lower()]
    return checked_ttl(seconds, f"App setting {setting}={raw!r}")


def ttl_seconds_of(value: datetime.timedelta | float, source: str) -> float:
    """The TTL in seconds given in code: a `timedelta` or a number of seconds (0 for never).

    Raises:
        ValueError: the value is negative, not finite, of another type, or between 0 and the minimum.
    """
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValueError(f"{source} must be a timedelta or a number of seconds, got {type(value).__name__}.")
    return checked_ttl(seconds, f"{source}={value!r}")


def agent_ttl(default_seconds: float, given: datetime.timedelta | float | None, agent_name: str) -> float:
    """An agent's TTL in seconds: `add_agent(conversation_ttl=given)`, or the app's when `given` is None.

    Raises:
        ValueError: as `ttl_seconds_of`, naming `add_agent(<name>): conversation_ttl`.
    """
    if given is None:
        return default_seconds
    return ttl_seconds_of(given, f"add_agent({agent_name!r}): conversation_ttl")


def checked_ttl(seconds: float, source: str) -> float:
    """`seconds` if it is 0 (off) or at least the minimum.

    Raises:
        ValueError: naming `source`.
    """
    if seconds == TTL_OFF:
        return TTL_OFF
    if not math.isfinite(seconds) or seconds < MIN_CONVERSATION_TTL_SECONDS:
        raise ValueError(
            f"{source} must be 0 (conversations never expire) or at least {MIN_CONVERSATION_TTL_SECONDS:g} seconds; "
            f"use {_FORMAT_HINT}."
        )
    return seconds


def describe_ttl(seconds: float) -> str:
    """A TTL as a person reads it: `14d`, `36h`, `90m`, `75s`, or `off`."""
    if seconds == TTL_OFF:
        return "off"
    for unit in ("d", "h", "m"):
        size = _UNITS[unit]
        if seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
