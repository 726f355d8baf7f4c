"""Turn streams in Redis: one Redis Stream per turn stream, entry id `0-<event id>`, for users who run Redis.

A Redis Stream reads by id range (`XRANGE`) and lets a reader on any instance block until the stream grows
(`XREAD BLOCK`), so readers wake within a round trip of an append without polling. An append is one Lua script:
atomic, skipping ids already stored, and refreshing the key's TTL. Every call runs on the store's own loop
(`ClientLoop`), where its one client and connection pool live. Needs the `redis` package (not a dependency of the
deployed app: install it where you choose this store). Knows nothing about entities or HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .channel import StreamEvent
from .client_loop import ClientLoop, ClientLoopClosedError, ClientLoopStore
from .event_codec import check_append, check_read, decode_data, encode_data
from .store_errors import StreamStoreUnavailableError

DEFAULT_TTL_SECONDS = 24 * 60 * 60.0
"""A stream outlives its last append by a day: the default lifetime of the turn receipt it belongs to
(`AGENT_HOST_TURN_RECORD_TTL_SECONDS`). Streams are deleted with their receipts; the TTL only clears streams whose
delete never came (a turn abandoned, an entity never run again)."""
DEFAULT_KEY_PREFIX = "agent-host:stream:"
SOCKET_TIMEOUT_SECONDS = 10.0
"""How long one command may take; a stream is a live view, so fail fast rather than hang a turn."""
LONGEST_BLOCK_SECONDS = 5.0
"""A blocking read waits at most this long per command, well inside the socket timeout; longer waits repeat it."""
_DELETE_BATCH = 500

# KEYS[1]: the stream; ARGV[1]: TTL in ms; then (id, event, data) per event, ids increasing. Adds the events whose id
# is above the stream's last and returns how many it added.
_APPEND_SCRIPT = """
local last = 0
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  last = tonumber(string.sub(top[1][1], 3))
end
local added = 0
for i = 2, #ARGV, 3 do
  local id = tonumber(ARGV[i])
  if id > last then
    redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'e', ARGV[i + 1], 'd', ARGV[i + 2])
    last = id
    added = added + 1
  end
end
if added > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return added
"""


class RedisStreamStore(ClientLoopStore):
    """Turn streams as Redis Streams under `key_prefix`, each expiring `ttl_seconds` after its last append.

    Every method raises `StreamStoreUnavailableError` when Redis cannot be reached or refuses.
    """

    def __init__(
        self, url: str, *, ttl_seconds: float = DEFAULT_TTL_SECONDS, key_prefix: str = DEFAULT_KEY_PREFIX
    ) -> None:
        """Prepare the store; nothing is opened until the first call.

        Args:
            url: A `redis://` or `rediss://` URL (with a password, a database number, as redis-py reads them).
            ttl_seconds: How long a stream lives after its last append.
            key_prefix: Put before every stream key.

        Raises:
            ValueError: the URL is not a Redis URL, or the TTL is not positive.
            ImportError: the `redis` package is not installed.
        """
        address = urlsplit(url)
        if address.scheme not in ("redis", "rediss") or not address.hostname:
            raise ValueError(
                f"A Redis stream store needs a redis:// or rediss:// URL with a host; got {address.scheme}:..."
            )
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be positive; got {ttl_seconds}.")
        try:
            import redis.asyncio  # noqa: F401 - checked here, so a missing package fails at startup, not mid-turn
        except ImportError as exc:
            raise ImportError(
                "The Redis turn stream store needs the redis package: add redis>=5 to requirements.txt."
            ) from exc
        self._url = url
        self._ttl_ms = max(1, round(ttl_seconds * 1000))
        self._prefix = key_prefix
        # No password in anything we print.
        self._where = f"Redis at {address.hostname}:{address.port or 6379}{address.path or '/0'}"
        self._loop = ClientLoop("agent-host-redis-streams")
        self._client: Any = None  # touched only on the store's own loop
        self._append_script: Any = None

    def _redis(self) -> Any:
        """The store's client, made on first use on the store's loop (the loop its connections belong to)."""
        if self._client is None:
            import redis.asyncio

            self._client = redis.asyncio.Redis.from_url(
                self._url, socket_timeout=SOCKET_TIMEOUT_SECONDS, socket_connect_timeout=SOCKET_TIMEOUT_SECONDS
            )
            self._append_script = self._client.register_script(_APPEND_SCRIPT)
        return self._client

    def _key(self, stream: str) -> str:
        return self._prefix + stream

    async def _run(self, action: str, work: Any) -> Any:
        """Run `work` (a coroutine) on the store's loop; Redis and network failures become store errors."""
        import redis.exceptions

        try:
            return await self._loop.run(work)
        except ClientLoopClosedError as exc:
            raise StreamStoreUnavailableError(self._where, action, "the store was closed") from exc
        except (redis.exceptions.RedisError, OSError, TimeoutError) as exc:
            raise StreamStoreUnavailableError(self._where, action, exc) from exc
        except ValueError as exc:  # stored data that is not a JSON object
            raise StreamStoreUnavailableError(self._where, action, exc) from exc

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        """Add events to the end of a stream; events whose id is not above the stream's last id are skipped."""
        check_append(stream, events)
        if not events:
            return
        arguments: list[Any] = [self._ttl_ms]
        for event in events:
            arguments += [event.id, event.event, encode_data(event.data)]

        async def run_script() -> None:
            self._redis()
            await self._append_script(keys=[self._key(stream)], args=arguments)

        await self._run(f"append to stream {stream!r}", run_script())

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events with ids greater than `after`, in order, at most `limit` of them."""
        check_read(after, limit)

        async def read_range() -> list[StreamEvent]:
            entries = await self._redis().xrange(self._key(stream), min=f"0-{after + 1}", max="+", count=limit)
            return _events(entries)

        return await self._run(f"read stream {stream!r}", read_range())

    async def last_id(self, stream: str) -> int:
        """The id of the stream's last stored event, 0 for an empty or unknown stream."""

        async def read_last() -> int:
            entries = await self._redis().xrevrange(self._key(stream), max="+", min="-", count=1)
            return _event_id(entries[0][0]) if entries else 0

        return await self._run(f"read stream {stream!r}", read_last())

    async def delete(self, streams: Sequence[str]) -> None:
        """Delete these streams entirely (unknown ones are ignored)."""
        keys = [self._key(stream) for stream in dict.fromkeys(streams)]

        async def unlink() -> None:
            # One key per command, so it also works on a Redis Cluster, where keys live on different nodes.
            for start in range(0, len(keys), _DELETE_BATCH):
                async with self._redis().pipeline(transaction=False) as pipe:
                    for key in keys[start : start + _DELETE_BATCH]:
                        pipe.unlink(key)
                    await pipe.execute()

        if keys:
            await self._run(f"delete {len(keys)} stream(s)", unlink())

    async def wait_for(self, stream: str, after: int, timeout: float, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events after `after` as soon as there are any, or an empty list after `timeout` seconds.

        A blocking `XREAD` on the server: an append from any instance wakes the reader within a round trip.
        """
        check_read(after, limit)

        async def read_blocking() -> list[StreamEvent]:
            deadline = time.monotonic() + max(timeout, 0.0)
            key = self._key(stream)
            while True:
                remaining = deadline - time.monotonic()
                block = None if remaining <= 0 else max(1, round(min(remaining, LONGEST_BLOCK_SECONDS) * 1000))
                reply = await self._redis().xread({key: f"0-{after}"}, count=limit, block=block)
                if reply:
                    return _events(reply[0][1])
                if remaining <= 0 or time.monotonic() >= deadline:
                    return []

        return await self._run(f"wait on stream {stream!r}", read_blocking())

    async def close_client(self, client: Any) -> None:
        """Close the Redis client and its connection pool."""
        await client.aclose()


def _event_id(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.partition("-")[2])


def _events(entries: list[tuple[Any, dict[bytes, bytes]]]) -> list[StreamEvent]:
    return [
        StreamEvent(_event_id(entry_id), fields[b"e"].decode("utf-8"), decode_data(fields[b"d"]))
        for entry_id, fields in entries
    ]
