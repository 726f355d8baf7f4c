"""The turn stream channel: what the entity writes while a turn runs and what HTTP requests read, on any instance.

A turn's stream is a sequence of events whose ids increase from 1 within the turn. The entity appends them (deltas
coalesced, at most one write per interval) while the agent runs; readers poll for events after the last id they
have. Streams are deleted with their turn receipts. A store holds no conversation state: losing a stream loses
only the live view, never the turn (its receipt is the record of what was delivered).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

TURN_STARTED = "turn.started"
MESSAGE_DELTA = "message.delta"
TOOL_CALL = "tool.call"
TOOL_RESULT = "tool.result"
APPROVAL_REQUESTED = "approval.requested"
TURN_COMPLETED = "turn.completed"
TURN_FAILED = "turn.failed"
TURN_CANCELLED = "turn.cancelled"
FINAL_EVENTS = (TURN_COMPLETED, TURN_FAILED, TURN_CANCELLED)


@dataclass(frozen=True)
class StreamEvent:
    """One event of a turn's stream.

    Attributes:
        id: Position in the turn's stream, increasing from 1 (the SSE `id:`).
        event: The event name (`turn.started`, `message.delta`, ...; the SSE `event:`).
        data: The event's JSON body (the SSE `data:`).
    """

    id: int
    event: str
    data: dict[str, Any] = field(default_factory=dict)


def stream_key(entity_name: str, conversation_id: str, turn_id: str) -> str:
    """The key of one turn's stream: unique per agent, conversation and turn."""
    return f"{entity_name}/{conversation_id}/{turn_id}"


@runtime_checkable
class TurnStreamStore(Protocol):
    """Where turn streams live between the entity that writes them and the requests that read them.

    Every method is a coroutine and may be called from different event loops (the entity runs agents on the host's
    own loop, HTTP functions on the worker's): an implementation keeps no loop-bound client across loops.
    """

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        """Add events to the end of a stream; an event whose id is not above the stream's last id is skipped, so the
        first write of an id stays (turn controls rely on it: `turn_controls.py`)."""
        ...

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events with ids greater than `after`, in order, at most `limit` of them."""
        ...

    async def last_id(self, stream: str) -> int:
        """The id of the stream's last stored event, 0 for an empty or unknown stream."""
        ...

    async def delete(self, streams: Sequence[str]) -> None:
        """Delete these streams entirely (unknown ones are ignored)."""
        ...
