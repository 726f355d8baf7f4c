"""The stored form of a stream event's data, and the checks every store applies to what it is asked to append.

Data is compact JSON text (UTF-8 where a store keeps bytes), so what a store returns is what SSE sends. Knows no
backend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .channel import StreamEvent


def encode_data(data: Mapping[str, Any]) -> str:
    """An event's data as compact JSON text.

    Raises:
        ValueError: the data is not JSON (NaN, infinity), so no SSE client could read it.
        TypeError: the data holds a value JSON has no form for.
    """
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def decode_data(text: str | bytes) -> dict[str, Any]:
    """An event's data back from its JSON text.

    Raises:
        ValueError: the stored text is not a JSON object.
    """
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"stored event data is a JSON {type(data).__name__}, not an object")
    return data


def check_append(stream: str, events: Sequence[StreamEvent]) -> None:
    """Refuse an append no store could keep in order.

    Args:
        stream: The stream key.
        events: What the caller wants to append.

    Raises:
        ValueError: the key is empty, an id is not a positive integer, or the ids do not increase.
    """
    if not stream:
        raise ValueError("A stream key must not be empty; build it with stream_key(entity, conversation, turn).")
    previous = 0
    for event in events:
        if isinstance(event.id, bool) or not isinstance(event.id, int) or event.id < 1:
            raise ValueError(f"Stream event ids are integers from 1; got {event.id!r} in stream {stream!r}.")
        if event.id <= previous:
            raise ValueError(
                f"Stream event ids must increase within an append; {event.id} follows {previous} in stream {stream!r}."
            )
        previous = event.id


def check_read(after: int, limit: int) -> None:
    """Refuse a read that cannot mean anything.

    Raises:
        ValueError: `after` is negative or `limit` is not positive.
    """
    if after < 0:
        raise ValueError(f"'after' is the last event id the reader has, 0 or more; got {after}.")
    if limit < 1:
        raise ValueError(f"'limit' must be at least 1; got {limit}.")
