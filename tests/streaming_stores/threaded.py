"""Run callables in threads of their own, for the store contract tests and measure_latency.py.

Each thread runs its own event loop, as the entity's loop and the HTTP server's loop do in the host, so a store is
exercised from more than one loop at once. Both users import it, so the failure handling is written once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


def in_threads(*work: Callable[[], None], timeout: float | None = None) -> None:
    """Run each callable in its own thread, join each (up to `timeout` seconds), then re-raise the first failure."""
    failures: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(target,)) for target in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if failures:
        raise failures[0]
