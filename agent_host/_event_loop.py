"""The event loop the host owns for running agents from synchronous entity functions.

Python entity functions are synchronous and `Entity.create` never awaits them, so an agent's coroutine
runs here, on one long-lived loop in a daemon thread (model clients may keep loop-bound connections).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class RunTimeoutError(TimeoutError):
    """A coroutine run through `AgentEventLoop.run` did not finish in time and was cancelled."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the run did not finish within {timeout:g} s and was cancelled")
        self.timeout = timeout


class AgentEventLoop:
    """A daemon thread running one asyncio loop; `run` blocks the caller until a coroutine finishes."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="agent-host-loop", daemon=True).start()
                self._loop = loop
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coroutine` on the host's loop, in the caller's context (its current span, so core's spans are the
        caller's children), and return its result (or raise its exception).

        Raises:
            RunTimeoutError: the coroutine did not finish within `timeout` seconds; it is cancelled.
        """
        caller = contextvars.copy_context()
        future = asyncio.run_coroutine_threadsafe(_in_context(caller, coroutine), self._ensure_loop())
        try:
            return future.result(timeout)
        except TimeoutError:
            if future.done():  # it finished just in time, or the coroutine itself raised TimeoutError
                return future.result()
            future.cancel()
            raise RunTimeoutError(timeout or 0) from None


async def _in_context(context: contextvars.Context, coroutine: Coroutine[Any, Any, T]) -> T:
    """Await `coroutine` as a task of its own in `context`; cancelling this cancels it too."""
    return await asyncio.get_running_loop().create_task(coroutine, context=context)


AGENT_LOOP = AgentEventLoop()
