"""A local stand-in for the Azure Functions host: runs a FunctionApp's HTTP functions, durable entities, orchestrations
and activities.

It goes through the real azure-functions / azure-functions-durable code paths, without Azure Functions Core Tools, and
through the Python worker's own code (azure-functions-runtime) wherever that runs (invocation.py says how).

The durable part is one machine: ``work_engine`` drains work per key (one drain per key, backoff on storage errors,
commit retry, idle notification); ``scheduler`` (entity batches) and ``orchestration_scheduler`` (episodes,
activities, timers) are its users, configured by frozen options objects. ``store`` owns the SQLite file, its tables in
``schema``; ``orchestration_store`` and ``outbox`` write orchestration rows and each step's messages through it.
Nothing here imports the rest of agent_host but the base (the clock, the event loop); fault injection lives with the
tests (``tests/faults.py`` wraps a scheduler's ``store``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import pathlib
import signal
from collections.abc import Callable, Sequence
from types import FrameType

import azure.functions as func

from .._clock import SYSTEM_CLOCK
from .._deps.durable_private import close_shared_session
from .._mcp_extension.protocol import McpServer
from .activities import ActivityClients
from .browser_guard import ALLOWED_HOSTS_SETTING, BrowserGuard, allowed_hosts_from_settings
from .durable_api import DurableWebhookApi
from .functions import DEFAULT_TASK_HUB, discover_durable_functions, discover_functions
from .invocation import INVOCATION_SETTING, FunctionInvoker, InvocationMode, create_invoker
from .listener import DEFAULT_REQUEST_DEADLINES, ListenAddressError, Listener, RequestDeadlines
from .mcp_endpoint import McpEndpoint
from .mcp_tools import discover_mcp_tools
from .orchestration_api import NON_RUNNING_STATES, ManagementUrls, OrchestrationWebhookApi
from .orchestration_scheduler import OrchestrationScheduler, OrchestrationSchedulerOptions
from .orchestration_store import OrchestrationStore
from .scheduler import DEFAULT_MAX_BATCH_SIZE, EntityScheduler, EntitySchedulerOptions
from .server import LocalHttpServer
from .state_lock import StateDirectoryInUseError, StateDirectoryLock
from .store import EmptiedStoreError, EntityStore, Signal, StorageError

__all__ = [
    "ALLOWED_HOSTS_SETTING",
    "DEFAULT_MAX_BATCH_SIZE",
    "INVOCATION_SETTING",
    "EmptiedStoreError",
    "EntityScheduler",
    "EntityStore",
    "InvocationMode",
    "ListenAddressError",
    "LocalHost",
    "OrchestrationScheduler",
    "OrchestrationStore",
    "RequestDeadlines",
    "Signal",
    "StateDirectoryInUseError",
    "StorageError",
    "allowed_hosts_from_settings",
    "run_local_host",
]

logger = logging.getLogger(__name__)

RPC_HOST = "127.0.0.1"
"""Where the private listener for the app's durable client binds: loopback only, whatever ``host`` is."""


class LocalHost:
    """Serves one app: its HTTP routes, the durable webhook API, the entity scheduler and the orchestration engine.

    Two listeners, as on Azure: the public one (``host``:``port``) serves the app's routes, and the webhook API only
    with the function key (or, with no key configured, to loopback clients); a private one on 127.0.0.1 and a port of
    its own serves the webhook API to the app's durable client binding (``rpcBaseUrl``), which carries no key.

    Entity state, acknowledged signals and orchestrations (instances, history, inboxes, timers, queued activities)
    live in ``<state_dir>/entities.sqlite3``, so a restart on the same ``state_dir`` keeps them and redelivers what was
    accepted but not yet committed.

    Attributes:
        store: The SQLite store (tests may read and write raw state through it).
        scheduler: The entity scheduler (tests use ``wait_idle``, and wrap its ``store`` to inject faults).
        orchestrations: The orchestration engine (tests use ``wake`` and ``wait_idle``, and wrap its ``store`` to
            inject faults).
        routes: The app's HTTP functions.
        mcp: The MCP endpoint at ``/runtime/webhooks/mcp``, when the app has ``mcpToolTrigger`` functions.
    """

    def __init__(
        self,
        app: func.FunctionApp,
        *,
        state_dir: pathlib.Path,
        host: str = "127.0.0.1",
        port: int = 7071,
        route_prefix: str = "api",
        function_key: str | None = None,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        request_deadlines: RequestDeadlines = DEFAULT_REQUEST_DEADLINES,
        deterministic_orchestrations: bool = False,
        overridable_existing_instance_states: str = NON_RUNNING_STATES,
        invocation: str | None = None,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        """Index the app's functions and open the store; nothing listens until :meth:`start`.

        ``app.get_functions()`` is called exactly once here (a DFApp must not be indexed twice).

        Args:
            app: The function app (``FunctionApp`` or ``DFApp``).
            state_dir: Directory for the entity database; created if missing.
            host: Address to bind.
            port: Port to bind; 0 picks a free one.
            route_prefix: Prefix of every HTTP route, as ``extensions.http.routePrefix`` in host.json.
            function_key: Key that FUNCTION/ADMIN routes require; None serves them without a key.
            max_batch_size: Most operations handed to an entity function in one call and committed together, as
                host.json's ``extensions.durableTask.maxEntityOperationBatchSize``; 1 commits each operation as it
                completes, so a crash re-runs at most the operation in flight.
            request_deadlines: How long a client may take to send a request head and body, on both listeners.
            deterministic_orchestrations: Run episodes and activities on one worker in scheduling order, so a run's
                orchestration histories are reproducible (for golden tests and benchmarks).
            overridable_existing_instance_states: As host.json's
                ``extensions.durableTask.overridableExistingInstanceStates``: ``NonRunningStates`` (the extension's
                default: starting the id of a pending or running instance is refused with 409) or ``AnyState`` (it
                replaces the instance).
            invocation: Who runs the functions: ``worker`` (the Python worker's own code, Python 3.13+), ``direct``,
                or None for the ``AGENT_HOST_INVOCATION`` setting (empty: the worker wherever it can run).
            allowed_hosts: Host names the public listener answers besides loopback and ``host``
                (``AGENT_HOST_ALLOWED_HOSTS``); others are refused, as are requests other origins' pages send
                (``browser_guard``).

        Raises:
            ValueError: An unknown ``overridable_existing_instance_states`` or invocation mode, or an app the Python
                worker would refuse to load (the worker's reason, naming the function).
            StateDirectoryInUseError: Another local host serves ``state_dir``.
        """
        functions = list(app.get_functions())
        self.invoker: FunctionInvoker = create_invoker(
            functions, requested=invocation, scratch_dir=pathlib.Path(state_dir)
        )
        self.routes, entity_functions = discover_functions(functions, self.invoker)
        self.durable_functions = discover_durable_functions(functions, self.invoker)
        self._host = host
        self._port = port
        self._started = False
        self._stopped = False
        clock = getattr(app, "clock", SYSTEM_CLOCK)
        # What the app opened itself (an AgentFunctionApp's stream store client), released when the host stops.
        self._close_app: Callable[[], None] | None = getattr(app, "close", None)
        # Held until stop(): a second host on the directory would deliver every queued signal again.
        self._state_lock = StateDirectoryLock(pathlib.Path(state_dir))
        self._state_lock.acquire()
        try:
            self.store = EntityStore(pathlib.Path(state_dir), clock=clock)
        except BaseException:
            self._state_lock.release()
            raise
        self.scheduler = EntityScheduler(
            self.store, entity_functions, EntitySchedulerOptions(max_batch_size=max_batch_size), clock=clock
        )
        orchestration_store = OrchestrationStore(self.store)
        self.orchestrations = OrchestrationScheduler(
            orchestration_store,
            self.durable_functions,
            self.scheduler,
            OrchestrationSchedulerOptions(deterministic=deterministic_orchestrations),
            clock=clock,
        )
        urls = ManagementUrls(lambda: self.base_url, function_key)
        orchestration_api = OrchestrationWebhookApi(
            orchestration_store,
            self.orchestrations,
            urls,
            orchestrator_names={k: f.name for k, f in self.durable_functions.orchestrators.items()},
            activity_names=frozenset(self.durable_functions.activities),
            task_hub=DEFAULT_TASK_HUB,
            clock=clock,
            overridable_existing_instance_states=overridable_existing_instance_states,
        )
        durable_api = DurableWebhookApi(self.store, self.scheduler, orchestration_api)
        mcp_tools = discover_mcp_tools(functions, self.invoker, self.durable_client_binding)
        self.mcp = McpEndpoint(McpServer(mcp_tools)) if mcp_tools else None
        self._server = LocalHttpServer(
            self.routes,
            durable_api,
            route_prefix=route_prefix,
            function_key=function_key,
            rpc_base_url=lambda: self.rpc_base_url,
            invoker=self.invoker,
            client_urls=urls,
            mcp=self.mcp,
        )
        public = BrowserGuard(host, allowed_hosts).guard(self._server.handle)
        self._public = Listener(public, host=host, port=port, deadlines=request_deadlines)
        # The durable client polls state often: its requests are logged at DEBUG, the public ones at INFO.
        private = BrowserGuard(RPC_HOST).guard(durable_api.serve)
        self._private = Listener(
            private, host=RPC_HOST, port=0, deadlines=request_deadlines, access_log_level=logging.DEBUG
        )

    @property
    def base_url(self) -> str:
        """The URL clients use, e.g. ``http://127.0.0.1:7071`` (wildcard binds are reached through loopback)."""
        port = self._public.port if self._public.port is not None else self._port
        return f"http://{_connectable_host(self._host)}:{port}"

    @property
    def rpc_base_url(self) -> str:
        """The private webhook API's base URL that the app's durable client binding gets (``rpcBaseUrl``).

        Raises:
            RuntimeError: Before :meth:`start` (the private port is picked when it binds).
        """
        if self._private.port is None:
            raise RuntimeError("the local host's private listener is not bound yet; start the host first")
        return f"http://{RPC_HOST}:{self._private.port}/runtime/webhooks/durabletask/"

    def durable_client_binding(self, task_hub: str = DEFAULT_TASK_HUB) -> str:
        """The binding JSON a ``durable_client_input`` parameter receives, e.g. to build a client outside a function.

        Args:
            task_hub: The task hub it names.

        Returns:
            The JSON ``DurableOrchestrationClient`` takes.
        """
        return self._server.client_binding(task_hub)

    def _activity_binding(self, task_hub: str) -> str:
        """The client binding of an activity's durable client ("" names the default task hub)."""
        return self.durable_client_binding(task_hub or DEFAULT_TASK_HUB)

    def describe_routes(self) -> list[str]:
        """List the HTTP routes with their methods, one line each, for a startup banner.

        Returns:
            The lines.
        """
        return self._server.describe_routes(self.base_url)

    def describe_durable_functions(self) -> list[str]:
        """List the orchestrator, activity and entity functions, one section each, for a startup banner.

        Returns:
            The lines (none when the app has no durable functions).
        """
        webhook = f"{self.base_url}/runtime/webhooks/durabletask"
        sections = [
            (
                f"Orchestrator functions (start: POST {webhook}/orchestrators/{{name}}):",
                {f.name for f in self.durable_functions.orchestrators.values()},
            ),
            ("Activity functions:", {f.name for f in self.durable_functions.activities.values()}),
            (f"Entity functions ({webhook}/entities/{{name}}/{{key}}):", set(self.scheduler.entity_names)),
        ]
        lines: list[str] = []
        for title, names in sections:
            if names:
                lines.append(title)
                lines.extend(f"  {name}" for name in sorted(names))
        return lines

    def describe_mcp(self) -> list[str]:
        """The MCP endpoints and tools, one line each, for a startup banner (none when the app has no MCP tools).

        Returns:
            The lines.
        """
        if self.mcp is None:
            return []
        tools = ", ".join(sorted(tool.tool_name for tool in self.mcp.server.tools.values()))
        return [
            f"  Streamable HTTP  {self.base_url}/runtime/webhooks/mcp",
            f"  SSE (legacy)     {self.base_url}/runtime/webhooks/mcp/sse",
            f"  tools: {tools}",
        ]

    async def start(self) -> None:
        """Bind both listeners on the running loop and start the entity scheduler.

        Raises:
            RuntimeError: If this host was started before.
            ListenAddressError: If the address cannot be bound (an ``OSError``).
        """
        if self._started:
            raise RuntimeError("a LocalHost can be started only once")
        self._started = True
        try:
            await self._private.start()  # first: functions need its URL as soon as the public port answers
            self._public.check_address()
            await self.invoker.start()
            await self._public.start()
            # Activities with a durable client binding run where the HTTP functions do (activities.py says why).
            self.orchestrations.bind_clients(ActivityClients(self._activity_binding, asyncio.get_running_loop()))
            self.scheduler.start()
            self.orchestrations.start()
        except BaseException:
            await self._public.stop()
            await self._private.stop()
            await self.invoker.stop()
            raise

    async def stop(self) -> None:
        """Stop accepting requests, let in-flight requests and the running entity batches finish, close the store.

        Safe to call more than once, and after a failed :meth:`start`.
        """
        if self._stopped:
            return
        self._stopped = True
        try:
            if self.mcp is not None:
                await self.mcp.close()  # open SSE streams would hold the public listener's shutdown
            # Public first: functions still running there may call the private listener until they finish.
            await self._public.stop()
            await self._private.stop()
        finally:
            await asyncio.to_thread(self.orchestrations.stop)
            await asyncio.to_thread(self.scheduler.stop)
            await self.invoker.stop()  # last: the schedulers' running batches invoke through it
            if self._close_app is not None:
                await asyncio.to_thread(self._close_app)
            self.close()

    def close(self) -> None:
        """Close the store and give up the state directory: all a host that was never started holds."""
        self.store.close()
        self._state_lock.release()


def _connectable_host(host: str) -> str:
    """Turn a bind address into one a local client can connect to, formatted for a URL.

    Args:
        host: The bind address or host name.

    Returns:
        ``127.0.0.1`` for ``0.0.0.0``/empty, ``[::1]`` for ``::``, IPv6 literals in brackets, anything else as is.
    """
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        return "[::1]" if address.is_unspecified else f"[{host}]"
    return host


def run_local_host(
    app: func.FunctionApp,
    *,
    state_dir: pathlib.Path,
    host: str = "127.0.0.1",
    port: int = 7071,
    route_prefix: str = "api",
    function_key: str | None = None,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    banner_lines: Sequence[str] = (),
    overridable_existing_instance_states: str = NON_RUNNING_STATES,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve the app until Ctrl+C or SIGTERM, printing where it listens and what it serves.

    A first signal stops gracefully (the running entity batch finishes and commits); a second one exits at once,
    which is still safe because uncommitted signals are redelivered on the next start.

    Args:
        app: The function app.
        state_dir: Directory for the entity database.
        host: Address to bind.
        port: Port to bind.
        route_prefix: Prefix of every HTTP route.
        function_key: Key that FUNCTION/ADMIN routes require; None serves them without a key.
        max_batch_size: Most entity operations run and committed together (maxEntityOperationBatchSize).
        banner_lines: Extra lines printed after the address (for example which model is in use).
        overridable_existing_instance_states: Which existing orchestration instances a start replaces (host.json).
        allowed_hosts: Host names answered besides loopback and ``host`` (``AGENT_HOST_ALLOWED_HOSTS``).
    """
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    local_host = LocalHost(
        app,
        state_dir=state_dir,
        host=host,
        port=port,
        route_prefix=route_prefix,
        function_key=function_key,
        max_batch_size=max_batch_size,
        overridable_existing_instance_states=overridable_existing_instance_states,
        allowed_hosts=allowed_hosts,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(local_host, banner_lines))


async def _serve(local_host: LocalHost, banner_lines: Sequence[str]) -> None:
    """Run a host until a stop signal arrives, then stop it.

    Args:
        local_host: The host to run.
        banner_lines: Extra banner lines.
    """
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()

    def on_signal() -> None:
        """First signal: request a graceful stop. Second signal: exit immediately."""
        if stop_requested.is_set():
            print("Second interrupt: exiting now; uncommitted entity signals are redelivered on the next start.")
            os._exit(130)
        print("Stopping (waiting for running entity operations to finish)...", flush=True)
        stop_requested.set()

    def on_signal_threadsafe(signum: int, frame: FrameType | None) -> None:
        """Forward a classic signal handler call to the event loop (where add_signal_handler is unavailable)."""
        loop.call_soon_threadsafe(on_signal)

    installed: list[signal.Signals] = []
    previous: dict[signal.Signals, object] = {}

    def install_handlers() -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, on_signal)
                if signum not in installed:
                    installed.append(signum)
            except (NotImplementedError, RuntimeError):  # e.g. Windows event loops
                with contextlib.suppress(ValueError):  # ValueError: not on the main thread; Ctrl+C cannot stop us
                    previous.setdefault(signum, signal.signal(signum, on_signal_threadsafe))

    install_handlers()
    try:
        await local_host.start()
        # The worker's HTTP-streams server (uvicorn) takes SIGINT and SIGTERM for itself when it starts, and raises
        # them again once it has stopped: taken back, one Ctrl+C stops the host once.
        install_handlers()
        print(f"Listening on {local_host.base_url}", flush=True)
        print(f"Functions run through {local_host.invoker.description}", flush=True)
        print(f"Durable webhook API for the app's client: {local_host.rpc_base_url} (loopback only)", flush=True)
        for line in banner_lines:
            print(line, flush=True)
        print("HTTP routes:", flush=True)
        for line in local_host.describe_routes():
            print(line, flush=True)
        for line in local_host.describe_durable_functions():
            print(line, flush=True)
        if local_host.mcp is not None:
            print("MCP endpoint (x-functions-key: the function key, when one is set):", flush=True)
            for line in local_host.describe_mcp():
                print(line, flush=True)
        await stop_requested.wait()
    finally:
        await local_host.stop()
        try:
            await close_shared_session()
        except Exception:  # best effort at exit
            logger.debug("closing the durable client's HTTP session failed", exc_info=True)
        for signum in installed:
            loop.remove_signal_handler(signum)
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
