"""The Redis store against a real redis-server: keys, their TTL, blocking reads across instances, failures."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis
from hosting import free_port

from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent
from agent_host._streaming.redis_store import DEFAULT_TTL_SECONDS, RedisStreamStore
from agent_host._streaming.store_errors import StreamStoreUnavailableError


def test_a_stream_is_one_key_under_the_prefix_expiring_a_ttl_after_its_last_append(redis_server: str) -> None:
    store = RedisStreamStore(redis_server, ttl_seconds=100, key_prefix="test-ttl:")
    default = RedisStreamStore(redis_server, key_prefix="test-ttl-default:")
    try:
        asyncio.run(store.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA, {"text": "hi"})]))
        asyncio.run(default.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA, {"text": "hi"})]))
        with redis.Redis.from_url(redis_server) as client:
            keys = sorted(client.keys("test-ttl*"))
            ttl_ms, default_ttl_ms = client.pttl("test-ttl:a/c/t"), client.pttl("test-ttl-default:a/c/t")
            entries = client.xrange("test-ttl:a/c/t")
            client.delete(*keys)
    finally:
        store.close()
        default.close()

    assert keys == [b"test-ttl-default:a/c/t", b"test-ttl:a/c/t"]
    assert 95_000 < ttl_ms <= 100_000
    assert DEFAULT_TTL_SECONDS * 1000 - 5_000 < default_ttl_ms <= DEFAULT_TTL_SECONDS * 1000
    assert entries == [(b"0-1", {b"e": b"message.delta", b"d": b'{"text":"hi"}'})]


def test_a_reader_blocked_on_one_instance_wakes_on_another_instances_append(redis_server: str) -> None:
    reader, writer = RedisStreamStore(redis_server), RedisStreamStore(redis_server)
    got: list[StreamEvent] = []

    def append_later() -> None:
        time.sleep(0.2)
        asyncio.run(writer.append("wake/c/t", [StreamEvent(1, MESSAGE_DELTA, {"text": "now"})]))

    thread = threading.Thread(target=append_later)
    try:
        thread.start()
        started = time.monotonic()
        got = asyncio.run(reader.wait_for("wake/c/t", after=0, timeout=20))
        waited = time.monotonic() - started
        thread.join()
        asyncio.run(writer.delete(["wake/c/t"]))
    finally:
        reader.close()
        writer.close()

    assert got == [StreamEvent(1, MESSAGE_DELTA, {"text": "now"})]
    assert waited < 2


def test_unreachable_redis_is_a_store_error_that_hides_the_password() -> None:
    store = RedisStreamStore(f"redis://:hunter2-secret@127.0.0.1:{free_port()}/3")
    try:
        with pytest.raises(StreamStoreUnavailableError, match="could not read stream 'a/c/t'") as raised:
            asyncio.run(store.read("a/c/t"))
    finally:
        store.close()

    assert "127.0.0.1" in raised.value.message
    assert "/3" in raised.value.message
    assert "hunter2" not in raised.value.message


@pytest.mark.parametrize(
    ("url", "complaint"),
    [("http://127.0.0.1:6379", "redis:// or rediss://"), ("redis://", "with a host")],
)
def test_a_url_that_is_not_redis_is_refused_at_construction(url: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        RedisStreamStore(url)
