"""Where an app's turn streams live: the store it was given, or the one its settings choose, resolved when first needed.

Resolving late keeps building the app free of network clients. Settings that choose no store (or one that cannot be
built, logged once) leave the app without one: turns then run as before, and a stream asked for is replayed from the
turn's receipt once it finishes. Knows the store protocol and the choice from settings (`selection.py`), no store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .channel import TurnStreamStore
from .selection import UnconfiguredStreamStore, stream_store_from_settings

logger = logging.getLogger("agent_host.streaming")


class StreamStoreSource:
    """Gives the app's stream store; thread-safe, resolves at most once.

    Args:
        store: The store to use, when the app was given one.
        from_settings: Builds the store the app settings choose; used without `store`.
    """

    def __init__(
        self, store: TurnStreamStore | None = None, from_settings: Callable[[], TurnStreamStore | None] | None = None
    ) -> None:
        self._store = store
        self._from_settings = from_settings if store is None else None
        self._resolved = self._from_settings is None
        self._lock = threading.Lock()

    def __call__(self) -> TurnStreamStore | None:
        """The store, or None when there is none."""
        if self._resolved:
            return self._store
        with self._lock:
            if not self._resolved and self._from_settings is not None:
                self._store = _build(self._from_settings)
                # Set last: a caller that finds the store resolved must find it built.
                self._resolved = True
            return self._store

    def close(self) -> None:
        """Close the store this source built from the settings (a store it was given belongs to whoever gave it);
        the next call builds a fresh one."""
        with self._lock:
            if self._from_settings is None or not self._resolved:
                return
            built, self._store, self._resolved = self._store, None, False
        close = getattr(built, "close", None)
        if close is not None:
            close()


def app_stream_store(store: TurnStreamStore | None, turn_record_ttl_seconds: float) -> StreamStoreSource:
    """A host's turn stream store: `store`, or the one the settings choose (`AGENT_HOST_STREAM_STORE`, the storage
    account), whose streams (a Redis stream expires after this) live about as long as the turn receipts they are
    deleted with."""
    return StreamStoreSource(store, lambda: stream_store_from_settings(ttl_seconds=turn_record_ttl_seconds))


def _build(from_settings: Callable[[], TurnStreamStore | None]) -> TurnStreamStore | None:
    """The store the settings choose; None when they choose none or it cannot be built (logged)."""
    try:
        chosen = from_settings()
    except Exception as exc:
        logger.error(
            "No turn stream store: the settings name one that cannot be built (%s). Turns still run; their streams "
            "are replayed from their receipts once they finish.",
            f"{type(exc).__name__}: {exc}"[:300],
        )
        return None
    if isinstance(chosen, UnconfiguredStreamStore):
        logger.info("No turn stream store is configured; streamed turns are replayed when they end.")
        return None
    return chosen
