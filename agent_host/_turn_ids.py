"""Turn ids: the one format every issuer writes (the conversation client, orchestrations, workflow agent nodes).

A turn id starts with its issue time in milliseconds as 11 hex digits, so ids sort by issue time and a reader can
tell a recently issued one (it may still be queued); then a marker saying who issued it (none for a plain request,
never a hex digit), then the digits that make it unique. Knows nothing of where turns are stored.
"""

from __future__ import annotations

TURN_TIME_DIGITS = 11


def format_turn_id(issued_ms: int, marker: str, unique: str) -> str:
    """The turn id issued at `issued_ms` (ms since the epoch) by the issuer `marker`, made unique by `unique`."""
    return f"{issued_ms:0{TURN_TIME_DIGITS}x}{marker}{unique}"


def issued_at(turn_id: str) -> int | None:
    """When a turn id was issued (ms since the epoch), or None for an id this host did not issue."""
    try:
        return int(turn_id[:TURN_TIME_DIGITS], 16)
    except ValueError:
        return None
