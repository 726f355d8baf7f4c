"""Unit tests for the local host's entity scheduler, mostly driven through the real durable client and HTTP.

Each test runs its own event loop with ``asyncio.run``; azure-functions-durable's shared aiohttp session is closed at
the end of every loop because it is bound to the loop that created it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import aiohttp
import azure.durable_functions as df
import azure.functions as func
import pytest
from faults import crash_before_entity_commit, deliver_twice
from hosting import run_on_fresh_loop as run

from agent_host._local_host import EntityScheduler, EntityStore, LocalHost
from agent_host._local_host.scheduler import EntitySchedulerOptions

T = TypeVar("T")
Seen = list[tuple[str, str, Any]]


def counter_operation(
    seen: Seen, before: Callable[[], None] | None = None
) -> Callable[[df.DurableEntityContext], None]:
    """A counter entity body that records every operation it executes in ``seen`` (calling ``before`` first)."""

    def counter(context: df.DurableEntityContext) -> None:
        if before is not None:
            before()
        value = context.get_state(lambda: 0)
        operation = context.operation_name
        amount = context.get_input()
        seen.append((context.entity_key, operation, amount))
        if operation == "add":
            value += amount
        context.set_state(value)
        context.set_result(value)

    return counter


def make_app(seen: Seen, before: Callable[[], None] | None = None) -> df.DFApp:
    """A tiny app: a Counter entity, a POST route that signals it and a GET route that reads it."""
    app = df.DFApp(http_auth_level=func.AuthLevel.FUNCTION)
    body = counter_operation(seen, before)

    @app.entity_trigger(context_name="context", entity_name="Counter")
    def counter(context: df.DurableEntityContext) -> None:
        body(context)

    @app.route(route="counter/{key}", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def signal(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        await client.signal_entity(df.EntityId("Counter", req.route_params["key"]), "add", 1)
        return func.HttpResponse(status_code=202)

    @app.route(route="counter/{key}", methods=["GET"])
    @app.durable_client_input(client_name="client")
    async def read(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        state = await client.read_entity_state(df.EntityId("Counter", req.route_params["key"]))
        payload = {"exists": state.entity_exists, "value": state.entity_state}
        return func.HttpResponse(json.dumps(payload), mimetype="application/json")

    @app.route(route="echo/{first}/{rest}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
    def echo(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse(json.dumps({"route": "param", **req.route_params}), mimetype="application/json")

    @app.route(route="echo/fixed/{rest}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
    def echo_fixed(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse(json.dumps({"route": "literal", **req.route_params}), mimetype="application/json")

    return app


def client_for(host: LocalHost) -> df.DurableOrchestrationClient:
    """A durable client built from the same binding JSON the host hands to functions."""
    binding = {
        "taskHubName": "LocalHub",
        "creationUrls": {},
        "managementUrls": {},
        "rpcBaseUrl": host.rpc_base_url,
    }
    return df.DurableOrchestrationClient(json.dumps(binding))


def raw_input(value: Any) -> str:
    """The body ``signal_entity`` posts for ``value``: JSON-encoded by the client, then again by aiohttp."""
    return json.dumps(json.dumps(value))


async def read_counter(host: LocalHost, key: str) -> Any:
    """The counter's value as the durable client reads it (None if it does not exist)."""
    state = await client_for(host).read_entity_state(df.EntityId("Counter", key))
    return state.entity_state if state.entity_exists else None


# --- Through a LocalHost and the real durable client -------------------------------------------------------------


def test_five_signals_add_up_and_reads_go_through_the_webhook(tmp_path: pathlib.Path) -> None:
    """Five signals via the real client give state 5, read back through the webhook."""
    seen: Seen = []

    async def scenario() -> None:
        host = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        await host.start()
        try:
            assert host.base_url.startswith("http://127.0.0.1:") and not host.base_url.endswith(":0")
            client = client_for(host)
            assert await read_counter(host, "a") is None
            for _ in range(5):
                await client.signal_entity(df.EntityId("Counter", "a"), "add", 1)
            await host.scheduler.wait_idle(5)
            assert await read_counter(host, "a") == 5
            assert host.store.read_state("counter", "a") == "5"
            assert seen == [("a", "add", 1)] * 5
        finally:
            await host.stop()

    run(scenario)


def test_state_survives_a_restart(tmp_path: pathlib.Path) -> None:
    """A new host on the same state_dir sees and extends the previous state."""
    seen: Seen = []

    async def scenario() -> None:
        first = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        await first.start()
        try:
            await client_for(first).signal_entity(df.EntityId("Counter", "k"), "add", 3)
            await first.scheduler.wait_idle(5)
        finally:
            await first.stop()

        second = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        await second.start()
        try:
            assert await read_counter(second, "k") == 3
            await client_for(second).signal_entity(df.EntityId("Counter", "k"), "add", 4)
            await second.scheduler.wait_idle(5)
            assert await read_counter(second, "k") == 7
        finally:
            await second.stop()

    run(scenario)


def test_signals_acknowledged_before_start_are_processed_after_start(tmp_path: pathlib.Path) -> None:
    """Signals already in the store when the host starts are processed."""
    seen: Seen = []

    async def scenario() -> None:
        host = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        host.store.enqueue("counter", "x", "add", raw_input(2))
        host.store.enqueue("counter", "y", "add", raw_input(10))
        host.store.enqueue("counter", "x", "add", raw_input(5))
        assert seen == []
        await host.start()
        try:
            await host.scheduler.wait_idle(5)
            assert await read_counter(host, "x") == 7
            assert await read_counter(host, "y") == 10
            assert host.store.entities_with_pending() == []
        finally:
            await host.stop()

    run(scenario)


def test_crash_before_commit_redelivers_and_commits_exactly_once(tmp_path: pathlib.Path) -> None:
    """A batch discarded before commit is redelivered; its outcome is committed once."""
    seen: Seen = []
    crashed: list[list[int]] = []

    def crash_first_batch(name: str, key: str, batch: list[Any]) -> bool:
        if crashed:
            return False
        crashed.append([signal.seq for signal in batch])
        return True

    async def scenario() -> None:
        host = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        for _ in range(3):
            host.store.enqueue("counter", "c", "add", raw_input(1))
        crash_before_entity_commit(host.scheduler, crash_first_batch)
        await host.start()
        try:
            await host.scheduler.wait_idle(5)
            assert len(crashed) == 1 and len(crashed[0]) == 3
            assert len(seen) == 6  # the batch ran twice ...
            assert await read_counter(host, "c") == 3  # ... but its outcome was committed once
            assert host.store.pending("counter", "c", 10) == []
        finally:
            await host.stop()

    run(scenario)


def test_deliver_twice_makes_the_entity_see_the_operation_twice(tmp_path: pathlib.Path) -> None:
    """The duplicate-delivery seam really puts the operation into the batch twice."""
    seen: Seen = []

    async def scenario() -> None:
        host = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        deliver_twice(host.scheduler, lambda name, key, signal: key == "dup")
        await host.start()
        try:
            client = client_for(host)
            await client.signal_entity(df.EntityId("Counter", "dup"), "add", 1)
            await client.signal_entity(df.EntityId("Counter", "single"), "add", 1)
            await host.scheduler.wait_idle(5)
            assert await read_counter(host, "dup") == 2
            assert await read_counter(host, "single") == 1
            assert seen.count(("dup", "add", 1)) == 2
        finally:
            await host.stop()

    run(scenario)


def test_function_key_routing_and_error_bodies(tmp_path: pathlib.Path) -> None:
    """Function keys via header or code, 405/404 JSON errors, literal-over-parameter routing."""
    seen: Seen = []

    async def scenario() -> None:
        host = LocalHost(make_app(seen), state_dir=tmp_path, port=0, function_key="sekrit")
        await host.start()
        try:
            url = f"{host.base_url}/api/counter/k"
            async with aiohttp.ClientSession() as http:
                async with http.post(url) as response:
                    assert response.status == 401
                    assert (await response.json())["error"]["code"] == "unauthorized"
                async with http.post(url, headers={"x-functions-key": "wrong"}) as response:
                    assert response.status == 401
                async with http.post(url, headers={"x-functions-key": "sekrit"}) as response:
                    assert response.status == 202
                async with http.post(url, params={"code": "sekrit"}) as response:
                    assert response.status == 202
                await host.scheduler.wait_idle(5)
                async with http.get(url, headers={"x-functions-key": "sekrit"}) as response:
                    assert response.status == 200
                    assert response.headers["Content-Type"].startswith("application/json")
                    assert await response.json() == {"exists": True, "value": 2}
                async with http.delete(url, params={"code": "sekrit"}) as response:
                    assert response.status == 405
                    assert (await response.json())["error"]["code"] == "method_not_allowed"
                async with http.get(f"{host.base_url}/api/nothing/here") as response:
                    assert response.status == 404
                    assert (await response.json())["error"]["code"] == "not_found"
                # Anonymous routes need no key; literal segments beat parameters; segments are percent-decoded.
                async with http.get(f"{host.base_url}/api/echo/fixed/a%20b") as response:
                    assert await response.json() == {"route": "literal", "rest": "a b"}
                async with http.get(f"{host.base_url}/api/echo/other/x") as response:
                    assert await response.json() == {"route": "param", "first": "other", "rest": "x"}
        finally:
            await host.stop()

    run(scenario)


def test_signals_for_entities_the_app_lacks_are_refused_and_never_queued(tmp_path: pathlib.Path) -> None:
    """A signal for an entity name the app does not define answers 404 instead of waiting in the queue forever."""
    seen: Seen = []

    async def scenario() -> None:
        host = LocalHost(make_app(seen), state_dir=tmp_path, port=0)
        await host.start()
        try:
            with pytest.raises(Exception, match="unexpected status code 404"):
                await client_for(host).signal_entity(df.EntityId("Ghost", "g"), "boo", {"x": 1})
            url = f"{host.rpc_base_url}entities/ghost/g?op=boo"
            async with aiohttp.ClientSession() as http, http.post(url, json="{}") as response:
                assert response.status == 404
                body = await response.json()
            assert body["error"]["code"] == "entity_not_found"
            assert "'ghost'" in body["error"]["message"] and "counter" in body["error"]["message"]
            assert host.store.entities_with_pending() == []
            assert seen == []
        finally:
            await host.stop()

    run(scenario)


def test_stop_lets_the_running_batch_commit(tmp_path: pathlib.Path) -> None:
    """stop() waits for the batch in flight and commits it before closing the store."""
    seen: Seen = []
    started = threading.Event()

    def slow() -> None:
        started.set()
        threading.Event().wait(0.3)  # still running when stop() is called

    host = LocalHost(make_app(seen, slow), state_dir=tmp_path, port=0)

    async def scenario() -> None:
        await host.start()
        try:
            await client_for(host).signal_entity(df.EntityId("Counter", "s"), "add", 9)
            assert await asyncio.to_thread(started.wait, 5)
        finally:
            await host.stop()

    run(scenario)
    reopened = EntityStore(tmp_path)
    try:
        assert reopened.read_state("counter", "s") == "9"
        assert reopened.entities_with_pending() == []
    finally:
        reopened.close()


# --- The scheduler on its own, with hand-instrumented entity functions -------------------------------------------


def batch_sizes_of(handle: Callable[[str], str], sizes: list[int]) -> Callable[[str], str]:
    """Wrap an entity function so it records the size of every batch it receives."""

    def recording(request: str) -> str:
        sizes.append(len(json.loads(request)["batch"]))
        return handle(request)

    return recording


def test_batches_are_bounded_and_processed_in_order(tmp_path: pathlib.Path) -> None:
    """45 queued signals run as batches of 20, 20 and 5, in order."""
    seen: Seen = []
    sizes: list[int] = []
    store = EntityStore(tmp_path)
    for amount in range(45):
        store.enqueue("counter", "k", "add", raw_input(amount))
    counter = batch_sizes_of(df.Entity.create(counter_operation(seen)), sizes)
    scheduler = EntityScheduler(store, {"counter": counter}, EntitySchedulerOptions(max_batch_size=20))
    try:
        scheduler.start()
        asyncio.run(scheduler.wait_idle(5))
        assert sizes == [20, 20, 5]
        assert [amount for _, _, amount in seen] == list(range(45))
        assert store.read_state("counter", "k") == str(sum(range(45)))
    finally:
        scheduler.stop()
        store.close()


def test_a_signal_arriving_mid_batch_waits_for_the_next_batch(tmp_path: pathlib.Path) -> None:
    """Operations on one entity never overlap: later signals form the next batch."""
    seen: Seen = []
    sizes: list[int] = []
    started, release = threading.Event(), threading.Event()
    inner = batch_sizes_of(df.Entity.create(counter_operation(seen)), sizes)

    def blocking(request: str) -> str:
        started.set()
        assert release.wait(5)
        return inner(request)

    store = EntityStore(tmp_path)
    scheduler = EntityScheduler(store, {"counter": blocking})
    try:
        scheduler.start()
        store.enqueue("counter", "k", "add", raw_input(1))
        scheduler.schedule("counter", "k")
        assert started.wait(5)
        for _ in range(2):
            store.enqueue("counter", "k", "add", raw_input(1))
            scheduler.schedule("counter", "k")
        assert not scheduler.is_idle()
        release.set()
        asyncio.run(scheduler.wait_idle(5))
        assert sizes == [1, 2]
        assert store.read_state("counter", "k") == "3"
    finally:
        release.set()
        scheduler.stop()
        store.close()


def test_different_entities_run_in_parallel(tmp_path: pathlib.Path) -> None:
    """Batches of different entities run at the same time (a barrier proves it)."""
    seen: Seen = []
    barrier = threading.Barrier(2, timeout=3)
    handle = df.Entity.create(counter_operation(seen))

    def meet_then_run(request: str) -> str:
        barrier.wait()  # only passes if both entities' batches are running at once
        return handle(request)

    store = EntityStore(tmp_path)
    scheduler = EntityScheduler(store, {"counter": meet_then_run}, EntitySchedulerOptions(max_attempts=1))
    try:
        scheduler.start()
        for key in ("a", "b"):
            store.enqueue("counter", key, "add", raw_input(1))
            scheduler.schedule("counter", key)
        asyncio.run(scheduler.wait_idle(5))
        assert store.read_state("counter", "a") == "1"
        assert store.read_state("counter", "b") == "1"
    finally:
        scheduler.stop()
        store.close()


def test_failures_are_retried_one_signal_at_a_time_then_succeed(tmp_path: pathlib.Path) -> None:
    """After a failure the batch is retried signal by signal until it succeeds."""
    seen: Seen = []
    sizes: list[int] = []
    inner = df.Entity.create(counter_operation(seen))
    failures_left = [2]

    def flaky(request: str) -> str:
        sizes.append(len(json.loads(request)["batch"]))
        if failures_left[0]:
            failures_left[0] -= 1
            raise RuntimeError("framework hiccup")
        return inner(request)

    store = EntityStore(tmp_path)
    for _ in range(3):
        store.enqueue("counter", "k", "add", raw_input(1))
    scheduler = EntityScheduler(store, {"counter": flaky}, EntitySchedulerOptions(retry_backoff_seconds=0.01))
    try:
        scheduler.start()
        asyncio.run(scheduler.wait_idle(5))
        assert sizes == [3, 1, 1, 1, 1]
        assert store.read_state("counter", "k") == "3"
    finally:
        scheduler.stop()
        store.close()


def test_a_signal_that_keeps_failing_is_dead_lettered_with_ids_and_sizes_never_its_input(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A signal failing max_attempts times is dropped into a dead-letter log line that names it but holds no input."""
    calls: list[int] = []
    secret = "my card number is 4111 1111 1111 1111"

    def broken(request: str) -> str:
        calls.append(len(json.loads(request)["batch"]))
        raise RuntimeError("always broken")

    store = EntityStore(tmp_path)
    store.write_state("counter", "k", "41")
    first = store.enqueue("counter", "k", "add", raw_input(1))
    second = store.enqueue("counter", "k", "add", raw_input(secret))
    scheduler = EntityScheduler(
        store, {"counter": broken}, EntitySchedulerOptions(max_attempts=2, retry_backoff_seconds=0.01)
    )
    try:
        with caplog.at_level(logging.DEBUG, logger="agent_host._local_host"):
            scheduler.start()
            asyncio.run(scheduler.wait_idle(5))
        assert calls == [2, 1, 1, 1]
        assert store.pending("counter", "k", 10) == []
        assert store.read_state("counter", "k") == "41"
    finally:
        scheduler.stop()
        store.close()

    dead = [json.loads(r.getMessage().split(": ", 1)[1]) for r in caplog.records if "dead-letter" in r.getMessage()]
    assert [(d["seq"], d["key"], d["operation"], d["inputBytes"]) for d in dead] == [
        (first, "k", "add", len(raw_input(1))),
        (second, "k", "add", len(raw_input(secret))),
    ]
    assert all("input" not in record for record in dead)
    assert not [r for r in caplog.records if "4111" in r.getMessage()]
