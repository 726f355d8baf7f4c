"""Importing a conversation from agent-framework-azurefunctions on its first turn here (`import_published`).

An app switching from that host finds its existing conversations in `dafx-{agent}` entities under the same ids. When
an agent imports them and a turn arrives for a conversation never stored here, the trigger reads that entity's state
and sends it with the turn, converted to our records (`_published_state.py`); the conversation entity starts from it
only if it still has no state. The published entity is only read, never changed. Knows the durable client and the
published state's reader; nothing about how the entity stores a conversation.
"""

from __future__ import annotations

from typing import Any

import azure.durable_functions as df

from .._contract import AgentRoute
from .._published_state import read_published_conversation
from .entity_state import EntityStateReader


async def history_to_import(
    client: df.DurableOrchestrationClient, agent: AgentRoute, conversation_id: str, now_ms: int
) -> dict[str, Any] | None:
    """The `imported` field of a turn's `run` operation: the published host's conversation of this id, when the agent
    imports and nothing of this conversation is stored here (not even a deletion's tombstone); else None.

    Raises:
        StateCorruptError: the published state cannot be imported (nothing is signalled, nothing changes).
        StorageUnavailableError: the host or its store could not answer.
    """
    if agent.published_entity is None:
        return None
    ours, _ = await EntityStateReader(client, agent.entity_name).read_stored(conversation_id)
    if ours:
        return None
    exists, stored = await EntityStateReader(client, agent.published_entity).read_stored(conversation_id)
    if not exists:
        return None
    conversation = read_published_conversation(stored, agent.name, now_ms)
    return {"messages": conversation.messages, "source": conversation.source}
