"""How a turn stream store fails: its backend could not be reached, or no store is configured at all.

Both are `StorageUnavailableError`s (503 `storage_unavailable`), so a streaming route renders them like any other
storage failure. The producer catches `StreamStoreUnavailableError` and lets the turn run on: a stream is only the
live view of a turn, its receipt is the record. Knows nothing about any one backend.
"""

from __future__ import annotations

from .._errors import AgentHostError, StorageUnavailableError

STREAM_STORE_SETTING = "AGENT_HOST_STREAM_STORE"


class StreamStoreUnavailableError(StorageUnavailableError):
    """The turn stream store could not be read or written (network, service, file or permission failure).

    Its message speaks for a turn's stream, whose producer lets the turn run on; a request the failure refuses (a
    cancel, an `ifBusy` turn) says what it refused, with `failure` for the store's part.

    Attributes:
        store: Which store failed, e.g. ``Azure Table 'agenthostStreams'`` (never a secret).
        cause: What went wrong in a few words, e.g. ``ServiceRequestError: connection refused``.
        failure: The whole failure as a clause, e.g. ``the turn stream store (SQLite file /x) could not append to
            stream 'a/c1/t1': OperationalError: database or disk is full``.
    """

    def __init__(self, store: str, action: str, cause: BaseException | str) -> None:
        """Describe one failure.

        Args:
            store: Which store failed, without secrets.
            action: What the store was doing, e.g. ``append to stream 'a/c1/t1'``.
            cause: The backend's exception, or a description of the failure.
        """
        self.store = store
        self.cause = cause if isinstance(cause, str) else f"{type(cause).__name__}: {_first_line(cause)}"
        self.failure = f"the turn stream store ({store}) could not {action}: {self.cause}"
        AgentHostError.__init__(self, f"T{self.failure[1:]}. The turn itself is unaffected.")


class StreamStoreNotConfiguredError(StorageUnavailableError):
    """Streaming was used, but no turn stream store is configured and none can be chosen from the app's settings."""

    def __init__(self) -> None:
        AgentHostError.__init__(
            self,
            f"Streaming needs a turn stream store and none is configured. Set {STREAM_STORE_SETTING} to "
            f"'sqlite:<path>', 'azure' (the app's storage account, from AzureWebJobsStorage or its identity-based "
            f"AzureWebJobsStorage__* settings) or a 'redis://' / 'rediss://' URL. Turns without streaming are "
            f"unaffected.",
        )


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (Azure SDK errors append whole response bodies)."""
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
