"""The keyed work engine under both local-host schedulers: one drain per key, dirty keys looked at again, storage
errors retried, idle waiters woken by notification."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_host._local_host import StorageError
from agent_host._local_host.work_engine import Backoff, IdleSignal, KeyedWorkEngine, Step, StorageFailure


class OverlapDetector:
    """Steps that record how many drains of a key run at once, and how many times work was taken."""

    def __init__(self, work: int) -> None:
        self.lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.most_at_once = 0
        self.left = work

    def open_drain(self, key: str) -> Step:
        def step() -> bool:
            with self.lock:
                self.running[key] += 1
                self.most_at_once = max(self.most_at_once, self.running[key])
                took = self.left > 0
                self.left -= took
            sum(range(100))  # a step takes a little while: long enough for a second drain to be caught beside it
            with self.lock:
                self.running[key] -= 1
            return took

        return step


def engine_for(open_drain: Callable[[str], Step]) -> KeyedWorkEngine[str]:
    return KeyedWorkEngine(
        open_drain,
        name="a test engine",
        label=str,
        storage_backoff=Backoff(0.001, 0.01),
        idle=IdleSignal(),
    )


def test_a_key_scheduled_from_many_threads_never_has_two_drains_at_once() -> None:
    # The flake "task 0 completed 2 times": a drain released its key, then released it again on its way out, taking
    # the key from the drain a schedule() had started in between; the next schedule() started a third drain beside
    # that one, and both committed the same episode. This run cannot force that interleaving; it guards the invariant.
    detector = OverlapDetector(work=20_000)
    engine = engine_for(detector.open_drain)
    engine.start(ThreadPoolExecutor(8))

    def hammer() -> None:
        for _ in range(5_000):
            engine.schedule("instance")

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    asyncio.run(engine.idle.wait_until(lambda: not engine.is_busy(), 10, "the engine"))
    engine.stop()
    engine.join()

    assert detector.most_at_once == 1


def test_work_scheduled_while_a_step_runs_is_taken_by_the_same_drain() -> None:
    started, release = threading.Event(), threading.Event()
    drains: list[str] = []
    queue = ["first"]
    taken: list[str] = []

    def open_drain(key: str) -> Step:
        drains.append(key)

        def step() -> bool:
            if not queue:
                return False
            taken.append(queue.pop(0))
            started.set()
            release.wait(5)
            return False  # says nothing is left; only the dirty mark makes it look again

        return step

    engine = engine_for(open_drain)
    engine.start(ThreadPoolExecutor(2))
    engine.schedule("k")
    assert started.wait(5)
    queue.append("second")
    engine.schedule("k")
    release.set()
    asyncio.run(engine.idle.wait_until(lambda: not engine.is_busy(), 5, "the engine"))
    engine.stop()
    engine.join()

    assert taken == ["first", "second"]
    assert drains == ["k"]


def test_a_storage_error_is_recorded_retried_and_forgotten_once_the_store_answers() -> None:
    failures = [StorageError("the disk is full", cause="database or disk is full")] * 2
    seen: list[StorageFailure | None] = []
    engine: KeyedWorkEngine[str]

    def open_drain(key: str) -> Step:
        def step() -> bool:
            seen.append(engine.storage_failure(key))
            if failures:
                raise failures.pop()
            return False

        return step

    engine = engine_for(open_drain)
    engine.start(ThreadPoolExecutor(1))
    engine.schedule("k")
    asyncio.run(engine.idle.wait_until(lambda: not engine.is_busy(), 5, "the engine"))
    engine.stop()
    engine.join()

    assert seen[0] is None and len(seen) == 3
    assert seen[2] is not None and seen[2].cause == "database or disk is full" and not seen[2].holding_outcome
    assert engine.storage_failure("k") is None


def test_keep_committing_retries_the_write_alone_until_the_store_takes_it() -> None:
    attempts: list[int] = []

    def write() -> bool:
        attempts.append(1)
        if len(attempts) < 3:
            raise StorageError("the disk is full", cause="database or disk is full")
        return True

    engine = engine_for(lambda key: lambda: False)

    assert engine.keep_committing("k", write) is True
    assert len(attempts) == 3
    assert engine.storage_failure("k") is None


def test_keep_committing_gives_up_when_the_engine_stops() -> None:
    engine = engine_for(lambda key: lambda: False)
    engine.stop()

    def write() -> bool:
        raise StorageError("the disk is full", cause="database or disk is full")

    assert engine.keep_committing("k", write) is False
    failure = engine.storage_failure("k")
    assert failure is not None and failure.holding_outcome


def test_wait_until_wakes_on_notify_without_polling() -> None:
    idle = IdleSignal()
    done = threading.Event()

    async def scenario() -> None:
        waiter = asyncio.ensure_future(idle.wait_until(done.is_set, 5, "the test"))
        await asyncio.sleep(0)
        assert not waiter.done()
        done.set()
        threading.Thread(target=idle.notify).start()
        await asyncio.wait_for(waiter, 2)

    asyncio.run(scenario())


def test_wait_until_raises_timeout_error_naming_who_is_busy() -> None:
    with pytest.raises(TimeoutError, match=r"the test still busy after 0\.05 s"):
        asyncio.run(IdleSignal().wait_until(lambda: False, 0.05, "the test"))


def test_an_engine_starts_only_once() -> None:
    engine = engine_for(lambda key: lambda: False)
    engine.start(ThreadPoolExecutor(1))

    with pytest.raises(RuntimeError, match="a test engine can be started only once"):
        engine.start(ThreadPoolExecutor(1))
    engine.stop()
    engine.join()


class _LockWithExitHook:
    """Wraps the engine's lock to call `on_exit` each time it is released: the test's way into the handover window."""

    def __init__(self, inner: threading.Lock, on_exit: Callable[[], None]) -> None:
        self._inner = inner
        self._on_exit = on_exit

    def __enter__(self) -> None:
        self._inner.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._inner.release()
        self._on_exit()


def test_a_drain_that_released_its_key_never_releases_it_from_the_next_drain() -> None:
    # Forces the flake's interleaving: work arrives just after the first drain released its key (a second drain
    # starts), then again once the first drain has returned. The second drain still holds the key then, so that
    # work only marks it dirty: two drains in all. Had the first drain released the key again on its way out, the
    # last schedule() would have started a third drain beside the second.
    engine = engine_for(lambda key: lambda: False)
    drain = engine._drain
    drains: list[int] = []
    last_work_sent, second_drained = threading.Event(), threading.Event()
    window = {"open": False}

    def arrive_in_window() -> None:
        if window["open"] and "k" not in engine._active:
            window["open"] = False
            engine.schedule("k")

    def counted_drain(key: str) -> None:
        drains.append(len(drains) + 1)
        if len(drains) == 1:
            window["open"] = True
            drain(key)
            engine.schedule(key)
            last_work_sent.set()
        else:
            assert last_work_sent.wait(10)
            drain(key)
            second_drained.set()

    engine._lock = _LockWithExitHook(engine._lock, arrive_in_window)  # type: ignore[assignment]
    engine._drain = counted_drain  # type: ignore[method-assign]
    engine.start(ThreadPoolExecutor(4))
    engine.schedule("k")
    assert second_drained.wait(10)
    engine.stop()
    engine.join()

    assert drains == [1, 2]
    assert not engine.is_busy()
