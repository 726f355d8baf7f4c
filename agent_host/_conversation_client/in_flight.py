"""Turns in flight: which turns of a conversation were accepted and have not settled, for `ifBusy` and cancel.

The entity records a turn only once it settles, so a trigger learns of turns still queued or running from the turn
controls in the stream store (`_streaming/turn_controls.py`): every turn a front door accepts (the turns route,
`/run`, AG-UI, the OpenAI Responses API, an agent's MCP tool) is listed there before it is signalled, in the order
triggers accepted them, and a turn that was cancelled before it started will never run. Knows the read model and the
controls; nothing of HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from .._clock import Clock
from .._conversation.view import ConversationView
from .._settings import HostSettings
from .._streaming.channel import TurnStreamStore
from .._streaming.turn_controls import TurnControls
from .._turn_ids import issued_at

logger = logging.getLogger("agent_host.http")

# Clocks of different instances (or one clock stepped back) disagree by this much at most, as far as deciding
# whether an unknown turn id may still be queued goes.
CLOCK_SKEW_TOLERANCE_MS = 60_000


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


class TurnsInFlight:
    """Where every front door of a host finds a conversation's turns in flight: the turn stream store they are listed
    in, and the rule for whether a turn id without a receipt may still be queued or running.

    Args:
        stream_store: The host's turn stream store, resolved when first needed (None when there is none).
        settings: The host's settings (how long a turn may wait, and run).
        clock: The host's clock.
    """

    def __init__(
        self, stream_store: Callable[[], TurnStreamStore | None], settings: HostSettings, clock: Clock
    ) -> None:
        self._stream_store = stream_store
        self._settings = settings
        self._clock = clock

    def of(self, entity_name: str, conversation_id: str) -> InFlight | None:
        """One conversation's turns in flight; None without a turn stream store (turns are then all enqueued)."""
        store = self._stream_store()
        if store is None:
            return None
        return InFlight(TurnControls(store, entity_name, conversation_id), self.may_be_pending)

    def may_be_pending(self, turn_id: str, state: ConversationView) -> bool:
        """Whether a turn id without a receipt may still be queued or running (`may_be_pending`)."""
        return may_be_pending(turn_id, state, self._settings, self._clock)


def may_be_pending(turn_id: str, state: ConversationView, settings: HostSettings, clock: Clock) -> bool:
    """An unknown turn id is pending only if it was issued recently and no turn issued clearly later finished.

    Operations on one entity run in order, so a finished later turn means this one never arrived; "clearly" allows
    for clocks that disagree (another instance's, or one stepped back).
    """
    issued = issued_at(turn_id)
    if issued is None:
        return False
    # A turn may wait behind others for as long as a request waits, then run up to the run timeout; twice that.
    window_ms = (settings.max_wait_seconds + settings.run_timeout_seconds) * 1000 * 2
    if clock.now_ms() - issued > window_ms:
        return False
    return not any((issued_at(known) or 0) > issued + CLOCK_SKEW_TOLERANCE_MS for known in state.turn_ids)
