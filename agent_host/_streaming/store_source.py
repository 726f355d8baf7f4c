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
from .selection import UnconfiguredStreamStore

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
        self._lock = threading.Lock()

    def __call__(self) -> TurnStreamStore | None:
        """The store, or None when there is none."""
        if self._from_settings is None:
            return self._store
        with self._lock:
            build, self._from_settings = self._from_settings, None
            if build is not None:
                try:
                    chosen = build()
                    self._store = None if isinstance(chosen, UnconfiguredStreamStore) else chosen
                    if self._store is None:
                        logger.info("No turn stream store is configured; streamed turns are replayed when they end.")
                except Exception as exc:
                    logger.error(
                        "No turn stream store: the settings name one that cannot be built (%s). Turns still run; "
                        "their streams are replayed from their receipts once they finish.",
                        f"{type(exc).__name__}: {exc}"[:300],
                    )
            return self._store
