"""How the local host invokes an app's functions: the one seam every invocation goes through.

Two invokers sit behind it. The worker invoker hands each invocation to the Azure Functions Python worker's own code
(`azure-functions-runtime`, Python 3.13+), as the Functions host does over gRPC; the direct invoker calls the
functions itself, with the worker's converters and its rules, where that library cannot run. Everything around an
invocation (routing, keys, entity batches, history and replay, timers, the MCP endpoint) is the local host's and does
not change with the invoker. Knows the shapes of invocations; nothing about queues or listeners.
"""

from __future__ import annotations

import enum
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from .http_replies import joined_headers
from .indexing_rules import refuse_streams_without_init_indexing
from .invocation_context import Invocation

if TYPE_CHECKING:
    import azure.functions as func

    from .._event_loop import AgentEventLoop
    from .activities import ActivityClients, ActivityFunction, ActivityOutcome
    from .functions import HttpRoute
    from .mcp_tools import McpToolFunction

INVOCATION_SETTING = "AGENT_HOST_INVOCATION"
"""Chooses the invoker: ``worker``, ``direct``, or unset/empty for the worker wherever it can run."""


class InvocationMode(enum.Enum):
    """Who runs the app's functions under the local host."""

    WORKER = "worker"
    DIRECT = "direct"


@dataclass(frozen=True)
class HttpCall:
    """One request to an HTTP function, as the host hands it on.

    Attributes:
        request: The client's request (HTTP streams hand the function the request itself).
        body: Its body, already read.
        route_params: The route's parameters.
        invocation: The invocation's id and trace context (from the request's ``traceparent``).
    """

    request: web.BaseRequest
    body: bytes
    route_params: dict[str, str]
    invocation: Invocation

    @property
    def method(self) -> str:
        """The upper-case method."""
        return self.request.method.upper()

    @property
    def url(self) -> str:
        """The full URL."""
        return str(self.request.url)

    @property
    def headers(self) -> dict[str, str]:
        """The headers, one value per name (repeats joined by ', ', as the host joins them)."""
        return joined_headers(self.request.headers.items())

    @property
    def query(self) -> dict[str, str]:
        """The query parameters, the first value of each."""
        query: dict[str, str] = {}
        for name, value in self.request.query.items():
            query.setdefault(name, value)
        return query


class FunctionInvoker(Protocol):
    """Runs the app's functions for the local host.

    Attributes:
        mode: Which invoker this is.
        description: One line for the startup banner: what runs the functions, and why.
    """

    mode: InvocationMode
    description: str

    async def start(self) -> None:
        """Get ready on the host's event loop, before any request is served."""
        ...

    async def stop(self) -> None:
        """Release what :meth:`start` took, once nothing runs any more."""
        ...

    def entity_function(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        """The entity function: the extension's batch JSON in, the batch response JSON out (called on a thread)."""
        ...

    def orchestrator_handle(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        """The orchestrator: the orchestration context JSON in, its state JSON out (called on a thread)."""
        ...

    def run_activity(
        self,
        activity: ActivityFunction,
        input_text: str | None,
        loop: AgentEventLoop,
        clients: ActivityClients | None,
    ) -> ActivityOutcome:
        """Run an activity once on the calling thread: its encoded result, or how it failed."""
        ...

    async def call_tool(self, tool: McpToolFunction, context: str, client_binding: str) -> str:
        """Call an MCP tool function and return what reaches the extension: its return value, encoded as text."""
        ...

    async def call_http(self, route: HttpRoute, call: HttpCall, client_binding: str | None) -> web.StreamResponse:
        """Call an HTTP function and answer the request with what it returned.

        Raises:
            InvocationFailedError: the function (or the conversion of what it returned) failed.
        """
        ...


class InvocationFailedError(Exception):
    """A function failed in the invoker: it raised, or what it returned could not be converted.

    Attributes:
        message: ``Type: text`` of the exception, as the worker reports it.
        details: The traceback.
    """

    def __init__(self, message: str, details: str) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


def worker_unavailable_reason() -> str | None:
    """Why the worker invoker cannot run here, or None when it can."""
    if sys.version_info < (3, 13):
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return f"azure-functions-runtime, the worker's library, needs Python 3.13+ and this is Python {version}"
    missing = [name for name in ("azure_functions_runtime", "google.protobuf") if not _importable(name)]
    if missing:
        return f"{' and '.join(missing)} not installed (pip install azure-functions-runtime protobuf)"
    return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package
        return False


def create_invoker(functions: Sequence[func.Function], *, requested: str | None, scratch_dir: Path) -> FunctionInvoker:
    """The invoker for an app: the one asked for, else the worker where it can run, else direct calls.

    Refuses the app as the worker would at indexing (``ValueError`` naming the function and the worker's reason).

    Args:
        functions: The app's indexed functions (``app.get_functions()``).
        requested: ``worker``, ``direct`` or None/'' (from the caller or ``AGENT_HOST_INVOCATION``).
        scratch_dir: A directory of the host's own, where the worker is started (it holds no app).

    Raises:
        ValueError: an unknown mode, the worker asked for where it cannot run, an app the worker refuses, or an
            HTTP-streams app without ``PYTHON_ENABLE_INIT_INDEXING``.
    """
    refuse_streams_without_init_indexing(functions)
    choice = (requested if requested is not None else os.environ.get(INVOCATION_SETTING, "")).strip().lower()
    if choice not in ("", *(mode.value for mode in InvocationMode)):
        raise ValueError(
            f"{INVOCATION_SETTING}={choice!r} is not an invocation mode: use 'worker' (the Python worker's own code, "
            "Python 3.13+), 'direct', or leave it empty for the worker wherever it can run."
        )
    unavailable = worker_unavailable_reason()
    if choice == InvocationMode.WORKER.value and unavailable is not None:
        raise ValueError(f"{INVOCATION_SETTING}=worker, but {unavailable}; use 'direct' or leave it empty.")
    if choice == InvocationMode.DIRECT.value or unavailable is not None:
        from .direct_invoker import DirectInvoker

        asked = choice == InvocationMode.DIRECT.value
        why = "as asked (AGENT_HOST_INVOCATION=direct)" if asked else f"because {unavailable}"
        return DirectInvoker(functions, why=why)
    from .worker_invoker import WorkerInvoker

    return WorkerInvoker(functions, scratch_dir=scratch_dir)
