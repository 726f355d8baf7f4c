"""Reads of an entity's stored state through the durable client binding, a host that cannot answer told apart from
state that is not JSON (failure 16). Knows the binding, not what the state holds.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import azure.durable_functions as df

from .._deps.durable_private import rpc_base_url
from .._errors import StateCorruptError, StorageUnavailableError


class EntityStateReader:
    """Reads of one entity function's state through the durable client binding (the agent's, or the published
    host's entity a conversation is imported from)."""

    def __init__(self, client: df.DurableOrchestrationClient, entity_name: str) -> None:
        self._client = client
        self._entity_name = entity_name

    def entity(self, conversation_id: str) -> df.EntityId:
        """The entity that holds the conversation."""
        return df.EntityId(self._entity_name, conversation_id)

    async def read_stored(self, conversation_id: str) -> tuple[bool, Any]:
        """Whether the entity exists, and its state as the host returns it (JSON text or the decoded value).

        Raises:
            StateCorruptError: the stored state is not JSON.
            StorageUnavailableError: the host or its store could not answer.
        """
        try:
            response = await self._client.read_entity_state(self.entity(conversation_id))
        except ValueError as exc:
            # The SDK parses the body before it looks at the status: only a 200 means the stored state is not JSON.
            status = await self._read_status(conversation_id)
            if status != 200:
                raise StorageUnavailableError(f"the durable host answered {status} without a readable body") from None
            raise StateCorruptError(f"is not valid JSON ({exc})") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None
        except Exception as exc:  # the SDK raises a bare Exception naming an unexpected status
            raise StorageUnavailableError(f"the durable host could not read the conversation: {exc}") from None
        return bool(response.entity_exists), response.entity_state

    async def _read_status(self, conversation_id: str) -> int:
        """The status the host answers a read of the conversation with, body unread (only when the SDK failed)."""
        # The binding's RPC base URL is where the SDK sends its own read.
        base = rpc_base_url(self._client)
        url = f"{base}{df.EntityId.get_entity_id_url_path(self.entity(conversation_id))}"
        try:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0
