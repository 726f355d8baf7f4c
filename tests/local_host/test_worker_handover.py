"""One worker per key: a worker that hands its key back never takes it from the worker that got it next.

Both schedulers drain one key (an orchestration instance, an entity) on one worker at a time. The window these tests
open is the moment between a worker releasing its key and the worker function returning: a new message arriving
then starts the next worker at once. If the first worker released the key a second time on its way out, a third
message would start a third worker beside the second one; two episodes of one instance would then deliver the same
completion twice (CI saw "task 0 completed 2 times").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .driving import OrchestrationHost


class _LockWithExitHook:
    """Wraps a scheduler's lock to call `on_exit` every time the lock is released."""

    def __init__(self, inner: threading.Lock, on_exit: Callable[[], None]) -> None:
        self._inner = inner
        self._on_exit = on_exit

    def __enter__(self) -> None:
        self._inner.acquire()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._inner.release()
        self._on_exit()


def _drains_after_a_handover(scheduler: Any, key: tuple[Any, ...], is_owned: Callable[[], bool]) -> list[int]:
    """Let a message arrive in the handover window, then another once the first worker returned; list the workers.

    The second worker waits until the third message has been sent, so the count shows whether that message found the
    key owned (2 workers) or free although a worker still held it (3 workers).
    """
    original = scheduler._drain
    runs: list[int] = []
    third_sent = threading.Event()
    window = {"armed": False}

    def arrive_in_window() -> None:
        if window["armed"] and not is_owned():
            window["armed"] = False
            scheduler.schedule(*key)

    def counting_drain(*args: Any) -> None:
        runs.append(len(runs) + 1)
        run = len(runs)
        if run == 1:
            window["armed"] = True
            original(*args)
            scheduler.schedule(*key)  # the first worker has returned
            third_sent.set()
        else:
            assert third_sent.wait(10)
            original(*args)

    scheduler._lock = _LockWithExitHook(scheduler._lock, arrive_in_window)
    scheduler._drain = counting_drain
    scheduler.schedule(*key)
    return runs


def test_an_orchestration_released_by_one_worker_is_not_released_again_under_the_next(
    orchestrations: OrchestrationHost,
) -> None:
    instance_id = orchestrations.start_new("entity_calls", "handover")
    scheduler = orchestrations.local.orchestrations

    drains = _drains_after_a_handover(scheduler, (instance_id,), lambda: instance_id in scheduler._active)
    orchestrations.settle()

    assert drains == [1, 2]
    assert instance_id not in scheduler._active


def test_an_entity_released_by_one_worker_is_not_released_again_under_the_next(
    orchestrations: OrchestrationHost,
) -> None:
    orchestrations.start_new("entity_calls", "handover")
    scheduler = orchestrations.local.scheduler
    entity = ("counter", "shared")

    drains = _drains_after_a_handover(scheduler, entity, lambda: entity in scheduler._active)
    orchestrations.settle()

    assert drains == [1, 2]
    assert entity not in scheduler._active
