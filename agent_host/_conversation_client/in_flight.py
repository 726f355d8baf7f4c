"""Turns in flight: which turns of a conversation were accepted and have not settled, for `ifBusy` and cancel.

The entity records a turn only once it settles, so a trigger learns of turns still queued or running from the turn
controls in the stream store (`_streaming/turn_controls.py`): every accepted turn is listed there before it is
signalled, in the order triggers accepted them, and a turn that was cancelled before it started will never run. Knows
the read model and the controls; nothing of HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from .._conversation.view import ConversationView
from .._streaming.turn_controls import TurnControls

logger = logging.getLogger("agent_host.http")


@dataclass(frozen=True)
class InFlight:
    """One conversation's turns in flight.

    Attributes:
        controls: The conversation's turn controls.
        may_be_pending: Whether an unsettled turn id may still be queued or running, given the conversation (an id
            whose signal was lost stops counting once that window has passed).
    """

    controls: TurnControls
    may_be_pending: Callable[[str, ConversationView], bool]

    async def turns(self, state: ConversationView, before: int | None = None) -> list[str]:
        """The accepted turns that have not settled and will still run (or are running), oldest first; with
        `before`, only those accepted ahead of that place in the list."""
        busy = []
        for turn_id in await self.controls.recent_accepted(before):
            if state.settles(turn_id) or state.turn(turn_id) is not None or not self.may_be_pending(turn_id, state):
                continue
            cancelled = await self.controls.cancel_requested(turn_id) is not None
            if cancelled and not await self.controls.is_running(turn_id):
                continue  # cancelled while queued: it never runs
            busy.append(turn_id)
        return busy

    async def try_accept(self, turn_id: str) -> bool:
        """List a turn about to be signalled as in flight; a store that fails only costs later requests the sight of
        it (logged). Returns whether it was listed."""
        try:
            await self.controls.accept(turn_id)
        except Exception as exc:
            logger.warning("Turn %s could not be listed as in flight: %s", turn_id, f"{exc}"[:300])
            return False
        return True

    async def try_withdraw(self, turn_id: str) -> None:
        """Take back the listing of a turn that will not be signalled; a store that fails leaves it listed until its
        pending window passes (logged)."""
        try:
            await self.controls.withdraw(turn_id)
        except Exception as exc:
            logger.warning("Turn %s could not be taken off the turns in flight: %s", turn_id, f"{exc}"[:300])
