"""A turn run streaming for those watching it: its stream in the store, the agent's callback, or both.

The entity runs a turn this way when the request asked for a stream or the agent has a callback; what is stored
afterwards is what a non-streamed turn stores (`streamed_run.py`). Knows the channel and the callback protocol,
nothing about the entity's state or HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import AgentResponse, AgentResponseUpdate, AgentSession, Message, SupportsAgentRun

from .._streaming.callbacks import AgentCallbackContext, AgentResponseCallbackProtocol, CallbackNotifier
from .._streaming.channel import TurnStreamStore
from .._streaming.events import UpdateEvents
from .._streaming.writer import TurnStreamWriter
from .history import delivered_response
from .streamed_run import run_streamed


@dataclass(frozen=True)
class StreamedTurn:
    """One turn's watchers.

    Attributes:
        turn_id: The turn.
        stream: The turn's stream key.
        store: Where its stream is written, or None (no store configured).
        callback: The agent's callback, or None.
        context: What the callback is told about the turn.
    """

    turn_id: str
    stream: str
    store: TurnStreamStore | None
    callback: AgentResponseCallbackProtocol | None
    context: AgentCallbackContext

    async def run(
        self, agent: SupportsAgentRun, messages: Sequence[Message], *, session: AgentSession, **options: Any
    ) -> AgentResponse:
        """Run the agent streaming: each update to the stream and the callback, the answer to the callback last."""
        writer = TurnStreamWriter(self.store, self.stream) if self.store is not None else None
        events = UpdateEvents(self.turn_id)
        notifier = CallbackNotifier(self.callback, self.context) if self.callback is not None else None

        async def on_update(update: AgentResponseUpdate) -> None:
            if writer is not None:
                writer.add(events.from_update(update))
            if notifier is not None:
                await notifier.update(update)

        if writer is not None:
            await writer.start(self.turn_id)
        try:
            response = await run_streamed(agent, messages, session=session, on_update=on_update, **options)
            if writer is not None:
                writer.add(events.finish())
        except asyncio.CancelledError:
            # The run took too long: the turn fails, and its receipt, not the stream, says so.
            if writer is not None:
                writer.abort()
            raise
        finally:
            if writer is not None:
                await writer.close()
        if notifier is not None:
            await notifier.response(delivered_response(response, self.turn_id))
        return response
