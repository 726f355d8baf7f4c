"""Cancelling a turn from inside its run: a check at each step boundary, installed per turn as core middleware.

A cancel request is a turn control in the stream store (`_streaming/turn_controls.py`). Before each model call and
each tool call the turn reads it; once asked, the run stops gracefully the way core's middleware stops a loop (no
model call, a tool answered "not run" so every stored call keeps its result), and the entity then commits the
partial answer, marked, or nothing, as the request said. Knows core's middleware and the turn controls; nothing of
the entity's state or HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from agent_framework import (
    Agent,
    AgentResponse,
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationContext,
    FunctionMiddleware,
    MiddlewareTermination,
    ResponseStream,
    SupportsAgentRun,
)

from .._contract import CancelKeep
from .._streaming.turn_controls import TurnControls

logger = logging.getLogger("agent_host.entity")


async def _no_updates() -> AsyncIterator[ChatResponseUpdate]:
    """A streamed model call's updates when the turn stopped before the call: none."""
    return
    yield


CANCELLED_ANNOTATION_KEY: Final = "_cancelled"
"""Set on the messages a cancelled turn kept (`additional_properties`): they are a partial answer."""
PARTIAL: Final = "partial"
NOT_RUN_RESULT: Final = "Not run: the turn was cancelled before this tool ran."


class TurnCancelledError(Exception):
    """The turn was cancelled and keeps nothing: raised after its run, so nothing of it is committed."""


@dataclass
class TurnCancellation:
    """One turn's cancel checks.

    Attributes:
        controls: The conversation's turn controls.
        turn_id: The turn.
        keep: What the turn keeps once a cancel request was seen; None while it runs on.
    """

    controls: TurnControls
    turn_id: str
    keep: CancelKeep | None = field(default=None, init=False)
    started_before: bool = field(default=False, init=False)

    async def start(self) -> CancelKeep | None:
        """Mark the turn running, then read whether it was cancelled while queued (the request is read after the mark,
        so a trigger that does not see the mark knows the turn will see its request and never run). A turn marked
        before this attempt (redelivered after a crash) `started_before`."""
        self.started_before = await self.controls.is_running(self.turn_id)
        await self.controls.mark_running(self.turn_id)
        return await self.check()

    async def check(self) -> CancelKeep | None:
        """Whether the turn was asked to stop (remembered once seen); a store that fails here lets the turn run on."""
        if self.keep is None:
            try:
                self.keep = await self.controls.cancel_requested(self.turn_id)
            except Exception as exc:
                logger.warning("Turn %s could not read its cancel request: %s", self.turn_id, f"{exc}"[:300])
        return self.keep

    def install(self, agent: SupportsAgentRun) -> None:
        """Add the step checks to `agent`, the entity's own copy; an agent that is not core's `Agent` is stopped only
        between turns."""
        if isinstance(agent, Agent):
            agent.middleware = [*(agent.middleware or ()), _ModelStep(self.check), _ToolStep(self.check)]

    def settle(self, response: AgentResponse) -> None:
        """After the run: a cancelled turn that keeps nothing raises; one that keeps its partial answer is marked.

        Raises:
            TurnCancelledError: the turn was cancelled and keeps nothing.
        """
        if self.keep == "nothing":
            raise TurnCancelledError(self.turn_id)
        if self.keep == PARTIAL:
            for message in response.messages:
                message.additional_properties[CANCELLED_ANNOTATION_KEY] = PARTIAL


Check = Callable[[], Awaitable[CancelKeep | None]]


class _ModelStep(ChatMiddleware):
    """Before each model call: a cancelled turn makes no more calls, and its run ends with what it has."""

    def __init__(self, check: Check) -> None:
        self._check = check

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        if await self._check() is None:
            await call_next()
            return
        if context.stream:
            # No updates, as core's chat pipeline gives when middleware ends a streamed call without a result.
            context.result = ResponseStream(_no_updates(), finalizer=lambda _: ChatResponse(messages=[]))
        else:
            context.result = ChatResponse(messages=[])


class _ToolStep(FunctionMiddleware):
    """Before each tool call: a cancelled turn runs no more tools; the call is answered "not run" and the loop ends."""

    def __init__(self, check: Check) -> None:
        self._check = check

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        if await self._check() is None:
            await call_next()
            return
        context.result = NOT_RUN_RESULT
        raise MiddlewareTermination("The turn was cancelled.")
