"""Turn controls: what triggers and the entity tell each other about a conversation's turns while they are in flight.

The entity runs one operation at a time per conversation, so a running turn cannot be reached through its queue.
These records live in the turn stream store instead, which triggers and the entity share: which turns were accepted
(and in which order), which one has started running, and which were asked to stop. Each is a short stream of its own
(keys a turn id can never take, as turn ids hold no dot) and relies only on the store's rule that an append of an id
already stored is skipped, which makes the first writer of an id win on every backend. Knows the store protocol,
nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .._contract import CANCEL_KEEPS, CancelKeep
from .channel import StreamEvent, TurnStreamStore, stream_key

CANCEL_REQUESTED: Final = "turn.cancel_requested"
TURN_RUNNING: Final = "turn.running"
TURN_ACCEPTED: Final = "turn.accepted"
TURN_WITHDRAWN: Final = "turn.withdrawn"
_CANCEL_SUFFIX = ".cancel"
_RUNNING_SUFFIX = ".running"
ACCEPTED_STREAM = "accepted.turns"
# Accepting races other triggers for the next id; each lost race moves one id on.
_MAX_ACCEPT_ATTEMPTS = 50
# How many of the latest entries of the accepted list (acceptances and withdrawals) count when asking whether the
# conversation is busy; only turns that lost a race for the conversation withdraw, so withdrawals are few.
RECENT_ACCEPTED = 64
# Withdrawals are written after the acceptances they take back, so a read goes on past its window by this much.
_WITHDRAWALS_READ_PAST = 4 * RECENT_ACCEPTED


@dataclass(frozen=True)
class TurnControls:
    """The controls of one conversation's turns in one store.

    Attributes:
        store: The turn stream store the entity and the triggers share.
        entity_name: The conversation entity's name.
        conversation_id: The conversation.
    """

    store: TurnStreamStore
    entity_name: str
    conversation_id: str

    def _key(self, name: str) -> str:
        return stream_key(self.entity_name, self.conversation_id, name)

    async def request_cancel(self, turn_id: str, keep: CancelKeep) -> None:
        """Ask the turn to stop; the first request's `keep` holds however often it is asked (`cancel_requested`)."""
        stream = self._key(turn_id + _CANCEL_SUFFIX)
        await self.store.append(stream, [StreamEvent(1, CANCEL_REQUESTED, {"keep": keep})])

    async def cancel_requested(self, turn_id: str) -> CancelKeep | None:
        """What the turn was asked to keep when it was asked to stop, or None when it was not."""
        events = await self.store.read(self._key(turn_id + _CANCEL_SUFFIX), 0, 1)
        if not events:
            return None
        keep = events[0].data.get("keep")
        return "nothing" if keep == CANCEL_KEEPS[1] else "partial"

    async def mark_running(self, turn_id: str) -> None:
        """Say the entity started running the turn (written before it checks for a cancel request)."""
        await self.store.append(self._key(turn_id + _RUNNING_SUFFIX), [StreamEvent(1, TURN_RUNNING, {})])

    async def is_running(self, turn_id: str) -> bool:
        """Whether the entity started running the turn (it may have finished since)."""
        return await self.store.last_id(self._key(turn_id + _RUNNING_SUFFIX)) > 0

    async def accept(self, turn_id: str) -> int:
        """List the turn as accepted, at the end of the conversation's list; returns its place there (from 1), which
        orders it among the turns other triggers accept concurrently."""
        return await self._append_to_list(TURN_ACCEPTED, turn_id)

    async def withdraw(self, turn_id: str) -> None:
        """Take back an acceptance: the turn was never signalled and never runs (it lost the conversation to an
        earlier turn, or its signal failed)."""
        await self._append_to_list(TURN_WITHDRAWN, turn_id)

    async def _append_to_list(self, event: str, turn_id: str) -> int:
        stream = self._key(ACCEPTED_STREAM)
        next_id = await self.store.last_id(stream) + 1
        for _ in range(_MAX_ACCEPT_ATTEMPTS):
            await self.store.append(stream, [StreamEvent(next_id, event, {"turnId": turn_id})])
            written = await self.store.read(stream, next_id - 1, 1)
            if written and (written[0].event, written[0].data.get("turnId")) == (event, turn_id):
                return next_id
            next_id += 1  # another trigger took that id first
        raise RuntimeError(f"turn {turn_id} lost {_MAX_ACCEPT_ATTEMPTS} races for an id in stream {stream!r}")

    async def recent_accepted(self, before: int | None = None) -> list[str]:
        """The turns accepted among the latest entries of the list (only those placed before `before`, when given)
        and not withdrawn, oldest first."""
        stream = self._key(ACCEPTED_STREAM)
        last = await self.store.last_id(stream)
        end = last if before is None else min(last, before - 1)
        start = max(0, end - RECENT_ACCEPTED)
        events = await self.store.read(stream, start, end - start + _WITHDRAWALS_READ_PAST)
        withdrawn = {event.data.get("turnId") for event in events if event.event == TURN_WITHDRAWN}
        accepted = (event.data.get("turnId") for event in events if event.id <= end and event.event == TURN_ACCEPTED)
        return [str(turn_id) for turn_id in accepted if turn_id and turn_id not in withdrawn]

    def turn_streams(self, turn_ids: Sequence[str]) -> list[str]:
        """The control streams of these turns, to delete with their receipts."""
        return [self._key(turn_id + suffix) for turn_id in turn_ids for suffix in (_CANCEL_SUFFIX, _RUNNING_SUFFIX)]

    def conversation_streams(self) -> list[str]:
        """The conversation's own control streams, to delete with the conversation."""
        return [self._key(ACCEPTED_STREAM)]
