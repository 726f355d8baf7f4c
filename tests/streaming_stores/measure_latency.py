"""Measure every turn stream store: append and read latency, and how soon a waiting reader gets an append.

    .venv/bin/python tests/streaming_stores/measure_latency.py [--operations 300] [--rounds 300] [--json FILE]

Each store runs against its real backend, started here as the tests start it (a SQLite file in a temporary folder,
Azurite, redis-server). Appends are one coalesced delta (about 200 bytes) each, as the producer writes every 50 ms;
reads ask for what follows the reader's last id. Wake-up: a writer on one event loop (the entity's) appends to 1 or
20 streams every `--interval` seconds, readers on another loop (the HTTP server's) wait with `wait_for_events`; the
figure is the time from the start of an append to the reader holding the event. Prints p50 and p99 in ms and writes
them to `bench/results/stream_store_latency.json` (or `--json FILE`), which docs/streaming-stores.md quotes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[level]) for level in (2, 1, 0)]

from backing_services import running_azurite, running_redis  # noqa: E402
from threaded import in_threads  # noqa: E402

from agent_host._streaming.azure_table_store import AzureTableStreamStore  # noqa: E402
from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent, TurnStreamStore  # noqa: E402
from agent_host._streaming.host_storage import HostStorageConnection  # noqa: E402
from agent_host._streaming.redis_store import RedisStreamStore  # noqa: E402
from agent_host._streaming.sqlite_store import SqliteStreamStore  # noqa: E402
from agent_host._streaming.waiting import wait_for_events  # noqa: E402
from bench.feature_figures import RESULTS_DIR  # noqa: E402
from bench.report import machine  # noqa: E402
from bench.standalone import write_results  # noqa: E402

DELTA_TEXT = "The quick brown fox jumps over the lazy dog. " * 4  # ~180 characters: 50 ms of a fast model's tokens


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p99 of samples in seconds, as milliseconds rounded to the microsecond."""
    ordered = sorted(samples)
    pick = lambda share: ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]  # noqa: E731
    return {"p50_ms": round(pick(0.50) * 1000, 3), "p99_ms": round(pick(0.99) * 1000, 3), "n": len(ordered)}


def delta(event_id: int) -> StreamEvent:
    return StreamEvent(event_id, MESSAGE_DELTA, {"text": DELTA_TEXT})


async def time_operations(store: TurnStreamStore, operations: int) -> dict[str, dict[str, float]]:
    """Latency of single-event appends, and of reads of what follows a reader's last id."""
    stream = f"measure/{uuid.uuid4().hex[:8]}/appends"
    appends, reads, tails = [], [], []
    for event_id in range(1, operations + 1):
        started = time.perf_counter()
        await store.append(stream, [delta(event_id)])
        appends.append(time.perf_counter() - started)
    for event_id in range(1, operations + 1):
        started = time.perf_counter()
        got = await store.read(stream, after=event_id - 1, limit=1)
        reads.append(time.perf_counter() - started)
        if [event.id for event in got] != [event_id]:
            raise AssertionError(f"read after {event_id - 1} returned {got}")
    for _ in range(operations):
        started = time.perf_counter()
        await store.read(stream, after=operations)  # a reader that is up to date: nothing new
        tails.append(time.perf_counter() - started)
    await store.delete([stream])
    return {"append": percentiles(appends), "read_next": percentiles(reads), "read_caught_up": percentiles(tails)}


def time_wake_ups(store: TurnStreamStore, streams: int, rounds: int, interval: float) -> dict[str, float]:
    """Append start to reader holding the event, with readers and writer on different loops in different threads."""
    keys = [f"measure/{uuid.uuid4().hex[:8]}/wake-{n}" for n in range(streams)]
    appended_at: dict[tuple[str, int], float] = {}
    received_at: dict[tuple[str, int], float] = {}
    readers_ready = threading.Barrier(2)

    async def read_all() -> None:
        async def follow(key: str) -> None:
            last = 0
            while last < rounds:
                for event in await wait_for_events(store, key, after=last, timeout=10):
                    received_at[(key, event.id)] = time.perf_counter()
                    last = event.id

        tasks = [asyncio.ensure_future(follow(key)) for key in keys]
        await asyncio.sleep(0.2)  # every reader is waiting before the first append
        readers_ready.wait()
        await asyncio.gather(*tasks)

    async def write_all() -> None:
        readers_ready.wait()
        for event_id in range(1, rounds + 1):
            for key in keys:
                appended_at[(key, event_id)] = time.perf_counter()
                await store.append(key, [delta(event_id)])
            await asyncio.sleep(interval)

    in_threads(lambda: asyncio.run(read_all()), lambda: asyncio.run(write_all()))
    asyncio.run(store.delete(keys))
    return percentiles([received_at[key] - appended_at[key] for key in appended_at])


@contextlib.contextmanager
def stores() -> Iterator[dict[str, Callable[[], TurnStreamStore]]]:
    """A factory of each store, its backend running until the context ends."""
    with tempfile.TemporaryDirectory() as folder, running_azurite() as azurite, running_redis() as redis_url:
        connection = HostStorageConnection(connection_string=azurite)
        yield {
            "sqlite": lambda: SqliteStreamStore(Path(folder) / "streams.sqlite3"),
            "azure_table": lambda: AzureTableStreamStore(connection, "measureStreams"),
            "redis": lambda: RedisStreamStore(redis_url),
        }


def measure(
    factories: dict[str, Callable[[], TurnStreamStore]], operations: int, rounds: int, interval: float
) -> dict[str, dict[str, dict[str, float]]]:
    """Every figure for every store the factories make."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, make in factories.items():
        store = make()
        try:
            figures = asyncio.run(time_operations(store, operations))
            figures["wake_1_stream"] = time_wake_ups(store, 1, rounds, interval)
            figures["wake_20_streams"] = time_wake_ups(store, 20, max(1, rounds // 20), interval)
        finally:
            store.close()  # type: ignore[attr-defined]
        results[name] = figures
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=300, help="appends and reads timed per store")
    parser.add_argument(
        "--rounds", type=int, default=300, help="wake-up samples per store (20 streams: rounds/20 each)"
    )
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between a writer's appends")
    parser.add_argument(
        "--json", type=Path, default=RESULTS_DIR / "stream_store_latency.json", help="where to write the figures"
    )
    args = parser.parse_args(argv)

    started_on = machine()
    with stores() as factories:
        results = measure(factories, args.operations, args.rounds, args.interval)

    print(f"{'store':<12} {'figure':<16} {'p50 ms':>8} {'p99 ms':>8} {'n':>5}")
    for name, figures in results.items():
        for figure, values in figures.items():
            print(f"{name:<12} {figure:<16} {values['p50_ms']:>8} {values['p99_ms']:>8} {values['n']:>5}")
    plan = {"operations": args.operations, "rounds": args.rounds, "interval_seconds": args.interval}
    write_results(args.json, {"machine": started_on, **plan, "stores": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
