"""The conversation client on the Functions durable client binding: signal, read, wait, import, watch expiry.

`read_entity_state` returns the whole state, so every poll costs a read of the full conversation: the waits poll
with a short interval that grows (`waits.py`). A host or store that cannot answer is `storage_unavailable`
(503), never a corrupt conversation (architecture.md, failure 16).
"""

from __future__ import annotations

from typing import Any

import aiohttp
import azure.durable_functions as df

from .._clock import Clock
from .._contract import DELETE_OPERATION, RUN_OPERATION, AgentRoute
from .._conversation.state import decode_state
from .._conversation.view import ConversationView
from .._errors import StorageUnavailableError
from .._expiry.recent import RECENT_WATCHES
from .._expiry.starter import TurnExpiry, may_hold_queued_turns
from .._tracing import with_trace_context
from .entity_state import EntityStateReader
from .published_import import history_to_import
from .waits import ReadBackWaits


class DurableConversationClient(ReadBackWaits):
    """One agent's conversations through the durable client binding: the `ConversationClient` of a function app.

    Args:
        client: The durable client binding of the function serving the request.
        agent: The agent whose conversations these are.
    """

    def __init__(self, client: df.DurableOrchestrationClient, agent: AgentRoute) -> None:
        self._client = client
        self._agent = agent
        self._entities = EntityStateReader(client, agent.entity_name)

    @property
    def agent_name(self) -> str:
        """The agent whose conversations these are."""
        return self._agent.name

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Queue an operation on the conversation's entity (the host delivers it at least once).

        Raises:
            StorageUnavailableError: the host did not accept the signal.
        """
        if operation == RUN_OPERATION:
            payload = with_trace_context(payload)  # the turn's entity operation continues this request's trace
        try:
            await self._client.signal_entity(self._entities.entity(conversation_id), operation, payload)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None
        except Exception as exc:  # the SDK raises a bare Exception naming an unexpected status
            raise StorageUnavailableError(f"the durable host refused the signal: {exc}") from None
        if operation == DELETE_OPERATION:  # the conversation's next turn starts its expiry afresh
            RECENT_WATCHES.forget(self._client, self._agent.entity_name, conversation_id)

    async def read(self, conversation_id: str) -> ConversationView | None:
        """The conversation's validated state (a deleted one's tombstone included), or None when it never existed.

        Raises:
            StateCorruptError, StateVersionError: the stored state cannot be read; it is left untouched.
            StorageUnavailableError: the host or its store could not answer.
        """
        exists, stored = await self._entities.read_stored(conversation_id)
        return ConversationView(decode_state(stored)) if exists else None

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        """The `imported` field of a turn's `run` operation (see `published_import.py`), or None."""
        return await history_to_import(self._client, self._agent, conversation_id, now_ms)

    async def may_hold_queued_turns(self, conversation_id: str) -> bool:
        """With expiry on, whether the conversation's expiry orchestration runs (every accepted turn starts it)."""
        agent = self._agent
        return await may_hold_queued_turns(
            self._client, agent.entity_name, conversation_id, agent.conversation_ttl_seconds
        )

    def watch_expiry(self, conversation_id: str, clock: Clock) -> TurnExpiry:
        """Start the conversation's expiry watch alongside a turn or change; settle it with `finish`."""
        return TurnExpiry(self._client, self._agent, conversation_id, clock)
