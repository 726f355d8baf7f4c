"""The seam every trigger reaches a conversation through: `ConversationClient`, one agent's conversations.

`durable_client.DurableConversationClient` implements it on the Functions durable client binding, and
`agent_host.worker`'s `DurableTaskConversationClient` on a durabletask client. Knows the conversation's read model
and the entity's operations; nothing of HTTP, MCP or how the entity runs a turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .._clock import Clock
from .._contract import AgentRoute
from .._conversation.view import ConversationView


class TurnWatch(Protocol):
    """A conversation's expiry watch, started alongside a turn or change and settled after it."""

    async def finish(self, turn_count: int | None = None) -> object:
        """Settle the watch; `turn_count` is the conversation's turns once the turn settled, when known."""
        ...


class ConversationClient(Protocol):
    """One agent's conversations: signal their entities, read them as views, wait for what a request waits for."""

    @property
    def agent_name(self) -> str:
        """The agent whose conversations these are."""
        ...

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Queue an operation on the conversation's entity (delivered at least once)."""
        ...

    async def read(self, conversation_id: str) -> ConversationView | None:
        """The conversation (a deleted one's tombstone included), or None when nothing was ever stored."""
        ...

    async def read_for_delete(self, conversation_id: str) -> ConversationView | None:
        """As `read`, but state that cannot be read is a stand-in that exists (deleting is the way out of it)."""
        ...

    async def wait_for_turn(self, conversation_id: str, turn_id: str, timeout: float) -> ConversationView | None:
        """The state that settles the turn (recorded, expired, deleted with it), or None after `timeout` seconds."""
        ...

    async def wait_for_change(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """The state that acknowledges the retention request `change_id`, or None after `timeout` seconds."""
        ...

    async def wait_for_delete(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """The state that shows the delete request `change_id` ran, or None after `timeout` seconds."""
        ...

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        """The history a new conversation imports with its first turn, or None."""
        ...

    async def may_hold_queued_turns(self, conversation_id: str) -> bool:
        """Whether a conversation with nothing stored may still have a turn on its way (False only when the host
        knows none was ever accepted), so a made-up turn id is refused at once instead of waited on."""
        ...

    def watch_expiry(self, conversation_id: str, clock: Clock) -> TurnWatch:
        """Start the conversation's expiry watch alongside a turn or change."""
        ...


ConversationClientFactory = Callable[[Any, AgentRoute], ConversationClient]
"""An agent's conversations from the client a trigger was given: `factory(binding, agent)`. The function app's builds a
`DurableConversationClient` on the durable client binding; the standalone worker's ignores the binding. Every front
end (routes, `/run`, AG-UI, Responses, the inspector, MCP tools) builds its per-request client with the one factory
its host gives it, so a test can give another."""
