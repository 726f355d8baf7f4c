"""Callbacks for pushing a turn's updates elsewhere (SignalR, Web PubSub), in agent-framework-azurefunctions' shape.

A callback object has `on_streaming_response_update(update, context)` and `on_agent_response(response, context)`,
either may be a coroutine; the context names the agent, the conversation and the turn. A callback that raises never
fails the turn, but its developer sees it: a warning naming the callback and the exception (an `AttributeError`
names the attribute), once per callback method and exception type in a turn, so a per-update failure does not
flood the log. Knows core's update types, nothing about the entity or HTTP.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agent_framework import AgentResponse, AgentResponseUpdate

logger = logging.getLogger("agent_host.callbacks")


@dataclass(frozen=True)
class AgentCallbackContext:
    """Who a callback is called for, with agent-framework-azurefunctions' field names.

    Attributes:
        agent_name: The registered agent's name.
        correlation_id: The turn id (also `turn_id`).
        session_id: The conversation id (also `conversation_id`).
        request_message: The turn's message, when it has one (a turn may only answer approvals).
    """

    agent_name: str
    correlation_id: str
    session_id: str | None = None
    request_message: str | None = None

    @property
    def turn_id(self) -> str:
        """The turn being run."""
        return self.correlation_id

    @property
    def conversation_id(self) -> str | None:
        """The conversation the turn belongs to."""
        return self.session_id

    @property
    def thread_id(self) -> str | None:
        """The conversation id under agent-framework-azurefunctions' older name (deprecated there; no warning here,
        as callbacks read it on every update)."""
        return self.session_id


@runtime_checkable
class AgentResponseCallbackProtocol(Protocol):
    """What `AgentFunctionApp(default_callback=...)` and `add_agent(..., callback=...)` take."""

    def on_streaming_response_update(self, update: AgentResponseUpdate, context: AgentCallbackContext) -> Any:
        """Called with each update of the run as the agent produces it (may be a coroutine)."""
        ...

    def on_agent_response(self, response: AgentResponse, context: AgentCallbackContext) -> Any:
        """Called once with the turn's answer, as its caller receives it (may be a coroutine)."""
        ...


class CallbackNotifier:
    """Hands one turn's updates and answer to a callback; what it raises is reported, never the turn's failure.

    Args:
        callback: The agent's callback.
        context: What the callback is told about the turn.
    """

    def __init__(self, callback: AgentResponseCallbackProtocol, context: AgentCallbackContext) -> None:
        self.callback = callback
        self.context = context
        self._reported: set[tuple[str, type[BaseException]]] = set()

    async def update(self, update: AgentResponseUpdate) -> None:
        """Hand the callback one update."""
        await self._call(self.callback.on_streaming_response_update, update)

    async def response(self, response: AgentResponse) -> None:
        """Hand the callback the turn's answer."""
        await self._call(self.callback.on_agent_response, response)

    async def _call(self, method: Any, value: Any) -> None:
        try:
            result = method(value, self.context)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            name = getattr(method, "__qualname__", repr(method))
            if (name, type(exc)) in self._reported:
                return
            self._reported.add((name, type(exc)))
            logger.warning(
                "Callback %s raised %s: %s; turn %s of %s/%s goes on without it (later %s errors of this callback "
                "method in this turn are not logged)",
                name,
                type(exc).__name__,
                exc,
                self.context.correlation_id,
                self.context.agent_name,
                self.context.session_id,
                type(exc).__name__,
                exc_info=True,
            )
