"""RedisHistoryProvider: a user-owned core history provider that keeps each session's transcript in a Redis list.

One list per core session id, one JSON `Message.to_dict()` per element, oldest first. Message ids and every
additional property survive the round trip, so annotations other providers write (compaction's `_excluded`,
`_group`) come back as they were stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

import redis.asyncio as redis
from agent_framework import HistoryProvider, Message

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


class RedisHistoryProvider(HistoryProvider):
    """A history provider whose messages live in Redis, under one list per session.

    Each call opens its own connection and closes it before returning: the provider holds no client bound
    to an event loop, so it works from whichever loop runs the agent (a host may own a different one).

    Args:
        redis_url: Where Redis listens, e.g. `redis://127.0.0.1:6379/0`.
        source_id: The provider's source id in the session state and in context messages.
        key_prefix: Put in front of the session id to form the list's key; empty keeps the key equal to the id.
        load_messages: Whether to load history before a run.
        store_inputs: Whether to store the turn's input messages.
        store_outputs: Whether to store the response messages.

    Raises:
        ValueError: `redis_url` is empty.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "redis_history"

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        source_id: str | None = None,
        key_prefix: str = "",
        load_messages: bool = True,
        store_inputs: bool = True,
        store_outputs: bool = True,
    ) -> None:
        if not redis_url:
            raise ValueError("RedisHistoryProvider needs a redis_url such as 'redis://127.0.0.1:6379/0'.")
        super().__init__(
            source_id or self.DEFAULT_SOURCE_ID,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_outputs=store_outputs,
        )
        self.redis_url = redis_url
        self.key_prefix = key_prefix

    def key_for(self, session_id: str | None) -> str:
        """The Redis key of a session's list.

        Raises:
            ValueError: the run has no session id, so there is nothing to key the history on.
        """
        if not session_id:
            raise ValueError(
                "RedisHistoryProvider needs a session id to key the history on; "
                "run the agent with session=agent.create_session(session_id=...)."
            )
        return f"{self.key_prefix}{session_id}"

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """Every stored message of the session, oldest first."""
        async with redis.Redis.from_url(self.redis_url) as client:
            stored = await client.lrange(self.key_for(session_id), 0, -1)  # type: ignore[misc]
        return [Message.from_dict(json.loads(item)) for item in stored]

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append the run's messages to the end of the session's list, in one command."""
        if not messages:
            return
        encoded = [json.dumps(message.to_dict(), ensure_ascii=False) for message in messages]
        async with redis.Redis.from_url(self.redis_url) as client:
            await client.rpush(self.key_for(session_id), *encoded)  # type: ignore[misc]
