"""A store's own event loop: the one loop its network client is ever used on, whichever loops its callers run.

Async network clients (aiohttp sessions under the Azure SDK, redis connections) belong to the loop that opened them,
and the entity (the host's agent loop) and the HTTP routes (the worker's loop) call a store from different loops.
A client per calling loop would have to be closed on loops that may already be gone, and would fetch its own token
and open its own connections; instead the store runs every call on this loop, in a daemon thread, and callers await
the result from theirs. A call costs one thread hop (tens of microseconds), small beside a network round trip.
Knows no backend.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class ClientLoopClosedError(RuntimeError):
    """The store was closed; it runs nothing any more."""


class ClientLoop:
    """A daemon thread running one asyncio loop, started on first use, for one store's client."""

    def __init__(self, name: str) -> None:
        """Prepare the loop; the thread starts on the first call.

        Args:
            name: The thread's name, e.g. ``agent-host-stream-store``.
        """
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise ClientLoopClosedError(f"{self._name} was closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on this loop and return its result to the calling loop.

        Cancelling the caller cancels the coroutine on this loop too.

        Raises:
            ClientLoopClosedError: the loop was closed.
        """
        try:
            loop = self._running_loop()
        except ClientLoopClosedError:
            coroutine.close()
            raise
        if asyncio.get_running_loop() is loop:  # already here (a store calling itself): no hop
            return await coroutine
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))

    def close(self, finish: Callable[[], Awaitable[None]] | None = None, timeout: float = 10.0) -> None:
        """Cancel calls still running, run `finish` (closing the client) on the loop, then stop it and join its thread.

        Safe to call more than once and from any thread except the loop's own.

        Args:
            finish: What closes the client, awaited on the loop before it stops.
            timeout: Seconds to wait for `finish` and for the thread.
        """
        with self._lock:
            loop, thread = self._loop, self._thread
            self._closed = True
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def wind_down() -> None:
            # Calls still running here (a reader's blocking wait) end first, so no task is destroyed pending.
            current = asyncio.current_task()
            running = [task for task in asyncio.all_tasks() if task is not current]
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            if finish is not None:
                await finish()
            await loop.shutdown_asyncgens()

        try:
            asyncio.run_coroutine_threadsafe(wind_down(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            loop.close()


class ClientLoopStore(ABC):
    """What every store whose network client lives on a `ClientLoop` does alike: close that client there, then the loop.

    The Azure Table and Redis stores each close their client differently (`close_client`) but must both take it out of
    the store first, on the store's own loop, so no later call reuses a closed client; written once here.
    Subclasses set `_loop` and `_client` in `__init__`.
    """

    _loop: ClientLoop
    _client: Any

    @abstractmethod
    async def close_client(self, client: Any) -> None:
        """Close this store's client, on the store's loop; each store knows how its client closes."""

    async def aclose(self) -> None:
        """Close the client and the store's loop; later calls raise `StreamStoreUnavailableError`."""
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Close the client and the store's loop (from any thread but the store's own)."""

        async def finish() -> None:
            client, self._client = self._client, None
            if client is not None:
                await self.close_client(client)

        self._loop.close(finish)
