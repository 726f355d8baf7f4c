"""Storage faults on the local host: a full disk, a damaged page, an emptied database. Nothing acknowledged is lost.

A storage error is not an entity error: the entity function's output is kept and only the commit is retried, no
signal is dead-lettered for it, and the durable webhook API answers 503 ``storage_unavailable`` (JSON) for as long as
an entity is stuck on its store, so a reader sees a clear failure instead of "pending" forever.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import closing
from typing import Any, TypeVar

import aiohttp
import azure.durable_functions as df
import pytest
from hosting import child_pythonpath
from hosting import run_on_fresh_loop as run

from agent_host._local_host import LocalHost
from agent_host._local_host.store import (
    DATABASE_FILE_NAME,
    MANIFEST_FILE_NAME,
    EmptiedStoreError,
    EntityStore,
    StorageError,
)

T = TypeVar("T")
ROOT = pathlib.Path(__file__).resolve().parents[2]
BIG = 200_000  # characters: a state this size needs many new pages, so a full database cannot take it


class Journal:
    """An entity that appends each input to its state (a list) and records every run; it can be held mid-run."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.running = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def app(self) -> df.DFApp:
        app = df.DFApp()

        @app.entity_trigger(context_name="context", entity_name="Journal")
        def journal(context: df.DurableEntityContext) -> None:
            entry = context.get_input()
            self.runs.append(entry[:20])
            self.running.set()
            assert self.release.wait(10)
            context.set_state([*context.get_state(list), entry])

        return app


def client_for(host: LocalHost) -> df.DurableOrchestrationClient:
    """The durable client the app's functions get, built from the binding JSON the host hands them."""
    binding = {"taskHubName": "LocalHub", "creationUrls": {}, "managementUrls": {}, "rpcBaseUrl": host.rpc_base_url}
    return df.DurableOrchestrationClient(json.dumps(binding))


async def raw_read(host: LocalHost, key: str) -> tuple[int, Any]:
    """GET the entity through the durable webhook API, as the client does, and return the status and JSON body."""
    async with aiohttp.ClientSession() as http, http.get(f"{host.rpc_base_url}entities/journal/{key}") as response:
        return response.status, await response.json(content_type=None)


async def raw_signal(host: LocalHost, key: str, entry: str) -> tuple[int, Any]:
    """POST a signal through the durable webhook API and return the status and JSON body."""
    url = f"{host.rpc_base_url}entities/journal/{key}?op=append"
    async with aiohttp.ClientSession() as http, http.post(url, json=json.dumps(entry)) as response:
        return response.status, await response.json(content_type=None)


def test_a_full_disk_at_commit_keeps_the_output_retries_the_commit_and_never_reruns_the_operation(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = Journal()
    second = "second " + "x" * BIG

    async def scenario() -> dict[str, Any]:
        host = LocalHost(journal.app(), state_dir=tmp_path, port=0)
        await host.start()
        seen: dict[str, Any] = {}
        try:
            client = client_for(host)
            await client.signal_entity(df.EntityId("Journal", "j"), "append", "first")
            await host.scheduler.wait_idle(5)
            journal.release.clear()
            journal.running.clear()
            await client.signal_entity(df.EntityId("Journal", "j"), "append", second)
            assert await asyncio.to_thread(journal.running.wait, 5)
            host.store.limit_pages(host.store.page_count())  # the disk is full from here on
            journal.release.set()  # the operation finishes; its commit cannot
            await asyncio.sleep(1.0)  # several commit attempts, backing off from 0.1 s

            seen["read"] = await raw_read(host, "j")
            with pytest.raises(Exception, match="unexpected status code 503"):
                await client.read_entity_state(df.EntityId("Journal", "j"))
            seen["refused signal"] = await raw_signal(host, "j", "third " + "y" * BIG)
            seen["queued while full"] = [s.input[:9] for s in host.store.pending("journal", "j", 10)]
            seen["runs while full"] = list(journal.runs)

            host.store.limit_pages(None)  # space again: the kept outcome is committed
            await host.scheduler.wait_idle(10)
            seen["read after"] = await raw_read(host, "j")
            seen["queued after"] = host.store.pending("journal", "j", 10)
        finally:
            await host.stop()
        return seen

    with caplog.at_level(logging.WARNING, logger="agent_host._local_host"):
        seen = run(scenario)

    status, body = seen["read"]
    assert status == 503 and body["error"]["code"] == "storage_unavailable"
    assert "database or disk is full" in body["error"]["message"] and "keeps the outcome" in body["error"]["message"]
    status, body = seen["refused signal"]
    assert (status, body["error"]["code"]) == (503, "storage_unavailable")
    assert "Nothing was queued" in body["error"]["message"]
    assert seen["queued while full"] == ['"\\"second']  # still queued, not dead-lettered, nothing added
    assert seen["runs while full"] == ["first", second[:20]]  # the operation ran once, its commit was retried
    assert journal.runs == ["first", second[:20]]
    assert seen["read after"] == (200, ["first", second])
    assert seen["queued after"] == []
    failures = [r.getMessage() for r in caplog.records if r.getMessage().startswith("storage failure")]
    assert len(failures) >= 3 and all("keeping the outcome" in message for message in failures)
    assert not [r for r in caplog.records if "dead-letter" in r.getMessage()]


def damage_entities_table(state_dir: pathlib.Path) -> None:
    """Overwrite the page holding the entities table with garbage, as a bad sector or a torn write would."""
    path = state_dir / DATABASE_FILE_NAME
    with closing(sqlite3.connect(path)) as connection, connection:
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'entities'").fetchone()[0]
    connection.close()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xff" * page_size)


def test_a_damaged_page_answers_503_storage_unavailable_and_never_runs_the_entity(tmp_path: pathlib.Path) -> None:
    journal = Journal()

    async def write_first() -> None:
        host = LocalHost(journal.app(), state_dir=tmp_path, port=0)
        await host.start()
        try:
            await client_for(host).signal_entity(df.EntityId("Journal", "j"), "append", "first")
            await host.scheduler.wait_idle(5)
        finally:
            await host.stop()  # closing checkpoints the WAL into the database file

    async def read_damaged() -> dict[str, Any]:
        host = LocalHost(journal.app(), state_dir=tmp_path, port=0)
        await host.start()
        seen: dict[str, Any] = {}
        try:
            seen["read"] = await raw_read(host, "j")
            with pytest.raises(Exception, match="unexpected status code 503"):
                await client_for(host).read_entity_state(df.EntityId("Journal", "j"))
            seen["signal"] = await raw_signal(host, "j", "second")
            await asyncio.sleep(1.0)  # several attempts, more than the 3 after which an entity error dead-letters
            seen["read while stuck"] = await raw_read(host, "j")
            seen["queued"] = [s.operation for s in host.store.pending("journal", "j", 10)]
        finally:
            await host.stop()
        return seen

    run(write_first)
    damage_entities_table(tmp_path)
    seen = run(read_damaged)

    status, body = seen["read"]
    assert (status, body["error"]["code"]) == (503, "storage_unavailable")
    assert "database disk image is malformed" in body["error"]["message"]
    assert seen["signal"][0] == 202  # the queue's own pages are intact: the signal is kept
    status, body = seen["read while stuck"]
    assert (status, body["error"]["code"]) == (503, "storage_unavailable")
    assert "cannot run its queued operations" in body["error"]["message"] and "malformed" in body["error"]["message"]
    assert seen["queued"] == ["append"]  # never dead-lettered
    assert journal.runs == ["first"]  # the entity never ran on state it could not read


def test_the_store_writes_its_manifest_and_adopts_a_database_written_before_manifests(tmp_path: pathlib.Path) -> None:
    fresh = EntityStore(tmp_path / "fresh")
    fresh.close()
    older = tmp_path / "older"
    older.mkdir()
    with closing(sqlite3.connect(older / DATABASE_FILE_NAME)) as connection, connection:
        connection.execute("CREATE TABLE entities (name TEXT, key TEXT, state TEXT, PRIMARY KEY (name, key))")
        connection.execute("INSERT INTO entities VALUES ('journal', 'j', '[]')")
    connection.close()

    adopted = EntityStore(older)
    try:
        kept = adopted.read_state("journal", "j")
    finally:
        adopted.close()

    assert json.loads((tmp_path / "fresh" / MANIFEST_FILE_NAME).read_text())["database"] == DATABASE_FILE_NAME
    assert kept == "[]" and (older / MANIFEST_FILE_NAME).is_file()


def empty(path: pathlib.Path) -> None:
    path.write_bytes(b"")


def delete(path: pathlib.Path) -> None:
    path.unlink()


def replace_with_a_new_database(path: pathlib.Path) -> None:
    path.unlink()
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE unrelated (x)")
    connection.close()


@pytest.mark.parametrize(
    ("spoil", "problem"),
    [(empty, "is empty (0 bytes)"), (delete, "is missing"), (replace_with_a_new_database, "holds none of")],
    ids=["emptied", "deleted", "replaced"],
)
def test_a_store_that_held_data_and_lost_its_database_refuses_to_open(
    tmp_path: pathlib.Path, spoil: Callable[[pathlib.Path], None], problem: str
) -> None:
    store = EntityStore(tmp_path)
    store.write_state("journal", "j", '["first"]')
    store.close()
    database = tmp_path / DATABASE_FILE_NAME
    spoil(database)
    before = database.read_bytes() if database.exists() else None

    with pytest.raises(EmptiedStoreError) as refused:
        EntityStore(tmp_path)

    message = str(refused.value)
    assert str(database) in message and problem in message
    assert f"delete {tmp_path / MANIFEST_FILE_NAME} to start over" in message and "Restore" in message
    assert (database.read_bytes() if database.exists() else None) == before  # nothing was created or overwritten


def test_serve_refuses_to_start_on_an_emptied_store_and_says_which_file(tmp_path: pathlib.Path) -> None:
    state_dir = tmp_path / "state"
    store = EntityStore(state_dir)
    store.write_state("conversation_assistant", "c1", "{}")
    store.close()
    empty(state_dir / DATABASE_FILE_NAME)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI", "AGENT_HOST"))}
    env["PYTHONPATH"] = child_pythonpath(ROOT)

    result = subprocess.run(
        [sys.executable, "-m", "agent_host", "serve", "--port", "0", "--state-dir", str(state_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert result.returncode == 1
    assert f"{state_dir / DATABASE_FILE_NAME} is empty (0 bytes)" in result.stderr
    assert "Listening on" not in result.stdout and "Traceback" not in result.stderr


def test_a_full_disk_is_a_storage_error_and_leaves_state_and_queue_as_they_were(tmp_path: pathlib.Path) -> None:
    store = EntityStore(tmp_path)
    try:
        store.write_state("journal", "j", '["first"]')
        seq = store.enqueue("journal", "j", "append", '"second"')
        store.limit_pages(store.page_count())

        with pytest.raises(StorageError, match="could not commit a batch: database or disk is full") as full:
            store.commit_batch("journal", "j", json.dumps(["first", "x" * BIG]), seq)

        assert full.value.cause == "database or disk is full"
        assert store.read_state("journal", "j") == '["first"]'
        assert [s.seq for s in store.pending("journal", "j", 10)] == [seq]
    finally:
        store.close()
