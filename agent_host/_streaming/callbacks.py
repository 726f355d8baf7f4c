"""Callbacks for pushing a turn's updates elsewhere (SignalR, Web PubSub), in agent-framework-azurefunctions' shape.

A callback object has `on_streaming_response_update(update, context)` and `on_agent_response(response, context)`,
either may be a coroutine; the context names the agent, the conversation and the turn. A callback that raises is
logged and ignored: it never fails the turn. Knows core's update types, nothing about the entity or HTTP.
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


@runtime_checkable
class AgentResponseCallbackProtocol(Protocol):
    """What `AgentFunctionApp(default_callback=...)` and `add_agent(..., callback=...)` take."""

    def on_streaming_response_update(self, update: AgentResponseUpdate, context: AgentCallbackContext) -> Any:
        """Called with each update of the run as the agent produces it (may be a coroutine)."""
        ...

    def on_agent_response(self, response: AgentResponse, context: AgentCallbackContext) -> Any:
        """Called once with the turn's answer, as its caller receives it (may be a coroutine)."""
        ...


async def notify_update(
    callback: AgentResponseCallbackProtocol, update: AgentResponseUpdate, context: AgentCallbackContext
) -> None:
    """Hand the callback one update; what it raises is logged, never the turn's failure."""
    await _call(callback.on_streaming_response_update, update, context)


async def notify_response(
    callback: AgentResponseCallbackProtocol, response: AgentResponse, context: AgentCallbackContext
) -> None:
    """Hand the callback the turn's answer; what it raises is logged, never the turn's failure."""
    await _call(callback.on_agent_response, response, context)


async def _call(method: Any, value: Any, context: AgentCallbackContext) -> None:
    try:
        result = method(value, context)
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.warning(
            "Callback %s for turn %s of %s/%s raised; the turn goes on",
            getattr(method, "__qualname__", method),
            context.correlation_id,
            context.agent_name,
            context.session_id,
            exc_info=True,
        )
