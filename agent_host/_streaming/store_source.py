"""Where an app's turn streams live: the store it was given, or the one its settings name, resolved when first needed.

Resolving late keeps building the app free of network clients and of settings that only streaming reads; a store
the settings cannot give is logged once and streaming goes without one (finished turns are replayed from their
receipts). Knows the store protocol, not any store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .channel import TurnStreamStore

logger = logging.getLogger("agent_host.streaming")


class StreamStoreSource:
    """Gives the app's stream store; thread-safe, resolves at most once.

    Args:
        store: The store to use, when the app was given one.
        from_settings: Builds the store the app settings name (None when they name none); used without `store`.
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
                    self._store = build()
                except Exception as exc:
                    logger.error(
                        "No turn stream store: the settings name one that cannot be built (%s). Turns still run; "
                        "their streams are replayed from their receipts once they finish.",
                        f"{type(exc).__name__}: {exc}"[:300],
                    )
            return self._store
