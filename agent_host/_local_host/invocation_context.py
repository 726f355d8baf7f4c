"""What the Functions host says about an invocation besides its inputs: its id, trace context and retry context.

The host sends every invocation a W3C trace context (its own activity: a child of the request's `traceparent`, or a
new trace) and a retry context; the worker turns them into the `context` argument a function may declare. The direct
invoker builds that argument here, with the worker's shape. Knows nothing about serving or the worker's library.
"""

from __future__ import annotations

import inspect
import re
import secrets
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import azure.functions as func

from .._deps.functions_private import RetryContext, TraceContext

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_INVALID_TRACE_ID = "0" * 32
_INVALID_SPAN_ID = "0" * 16


@dataclass(frozen=True)
class Invocation:
    """One invocation as the host announces it.

    Attributes:
        invocation_id: A fresh id (the host's invocation id).
        trace_parent: The host's activity for the invocation, as a W3C ``traceparent``.
        trace_state: The W3C ``tracestate`` that came with the request ('' when none).
    """

    invocation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    trace_parent: str = field(default_factory=lambda: _traceparent(secrets.token_hex(16), "00"))
    trace_state: str = ""

    @classmethod
    def for_request(cls, headers: Mapping[str, str]) -> Invocation:
        """The invocation of an HTTP request: in the request's trace when it names a valid one, else in a new trace.

        Args:
            headers: The request's headers (case-insensitive lookups).
        """
        incoming = _TRACEPARENT.fullmatch((headers.get("traceparent") or "").strip().lower())
        if incoming is None or incoming.group(1) == _INVALID_TRACE_ID or incoming.group(2) == _INVALID_SPAN_ID:
            return cls()
        return cls(
            trace_parent=_traceparent(incoming.group(1), incoming.group(3)),
            trace_state=(headers.get("tracestate") or "").strip(),
        )


def _traceparent(trace_id: str, flags: str) -> str:
    """A traceparent for a new span (the host's invocation activity) in the given trace."""
    return f"00-{trace_id}-{secrets.token_hex(8)}-{flags}"


def function_directory(user_function: Callable[..., Any]) -> str:
    """The directory the worker reports as ``context.function_directory``: the folder of the function's source file."""
    try:
        return str(Path(inspect.getfile(user_function)).parent)
    except TypeError:  # a builtin or a callable object: the worker would fail to index it before this matters
        return ""


class _TraceContext(TraceContext):
    """``context.trace_context``: the host's activity for this invocation."""

    def __init__(self, invocation: Invocation) -> None:
        self._trace_parent = invocation.trace_parent
        self._trace_state = invocation.trace_state

    @property
    def trace_parent(self) -> str:
        """The W3C traceparent of the invocation."""
        return self._trace_parent

    @property
    def trace_state(self) -> str:
        """The W3C tracestate that came with the request."""
        return self._trace_state

    @property
    def attributes(self) -> dict[str, str]:
        """Activity tags; the local host sets none."""
        return {}


class _RetryContext(RetryContext):
    """``context.retry_context``: the first and only attempt (the local host runs no retry policies)."""

    @property
    def retry_count(self) -> int:
        """Always 0."""
        return 0

    @property
    def max_retry_count(self) -> int:
        """Always 0."""
        return 0

    @property
    def exception(self) -> Any:
        """None: no earlier attempt failed."""
        return None


class InvocationContext(func.Context):
    """The ``context`` argument of a function that declares one, as the worker builds it."""

    def __init__(self, function_name: str, directory: str, invocation: Invocation) -> None:
        """Describe one invocation.

        Args:
            function_name: The invoked function's name.
            directory: The folder of its source file (``function_directory``).
            invocation: Its id and trace context.
        """
        self._invocation = invocation
        self._function_name = function_name
        self._directory = directory
        self._thread_local = threading.local()
        self._thread_local.invocation_id = invocation.invocation_id
        self._trace_context = _TraceContext(invocation)
        self._retry_context = _RetryContext()

    @property
    def invocation_id(self) -> str:
        """The host's id of this invocation."""
        return self._invocation.invocation_id

    @property
    def thread_local_storage(self) -> Any:
        """Thread-local storage holding ``invocation_id``."""
        return self._thread_local

    @property
    def function_name(self) -> str:
        """The function's name."""
        return self._function_name

    @property
    def function_directory(self) -> str:
        """The folder of the function's source file."""
        return self._directory

    @property
    def trace_context(self) -> _TraceContext:
        """The invocation's trace context."""
        return self._trace_context

    @property
    def retry_context(self) -> _RetryContext:
        """The invocation's retry context."""
        return self._retry_context
