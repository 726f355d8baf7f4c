"""measure_latency.py still measures every store (a few operations each; figures reported, never asserted on)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent_host._streaming.azure_table_store import AzureTableStreamStore
from agent_host._streaming.channel import TurnStreamStore
from agent_host._streaming.host_storage import HostStorageConnection
from agent_host._streaming.redis_store import RedisStreamStore
from agent_host._streaming.sqlite_store import SqliteStreamStore

from .measure_latency import measure

FIGURES = ["append", "read_next", "read_caught_up", "wake_1_stream", "wake_20_streams"]


def test_every_store_gets_every_figure(azurite: str, redis_server: str, tmp_path: Path) -> None:
    factories: dict[str, Callable[[], TurnStreamStore]] = {
        "sqlite": lambda: SqliteStreamStore(tmp_path / "streams.sqlite3"),
        "azure_table": lambda: AzureTableStreamStore(HostStorageConnection(connection_string=azurite), "smokeStreams"),
        "redis": lambda: RedisStreamStore(redis_server),
    }

    results = measure(factories, operations=5, rounds=20, interval=0.005)

    assert list(results) == ["sqlite", "azure_table", "redis"]
    for figures in results.values():
        assert list(figures) == FIGURES
        assert [figures[name]["n"] for name in FIGURES] == [5, 5, 5, 20, 20]
        assert all(
            figures[name]["p99_ms"] >= figures[name]["p50_ms"] > 0 for name in FIGURES if name != "read_caught_up"
        )
