"""`python -m agent_host worker`: one process hosting agents on a durabletask worker and serving their HTTP API with
uvicorn, on a durabletask sidecar or the Durable Task Scheduler, until SIGINT or SIGTERM.

Knows the worker, the client, the listening socket and uvicorn; the command line and its one-line errors are
`__main__`'s.
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import grpc
import uvicorn
from agent_framework import SupportsAgentRun
from durabletask.client import TaskHubGrpcClient
from durabletask.worker import TaskHubGrpcWorker

from .._mcp_extension.streamable_http import MCP_PATH
from .._settings import describe_chat_client
from ._asgi import AuthHook, asgi_app
from ._worker import AgentWorker, worker_options

logger = logging.getLogger("agent_host.worker")

DEFAULT_SIDECAR = "localhost:4001"
DEFAULT_TASKHUB = "default"
_PROBE_INSTANCE = "agent-host-worker-probe"
# How long a stop waits for requests in flight (an event stream may be open for minutes) before closing them.
GRACE_SECONDS = 30


class ListenError(OSError):
    """The HTTP address cannot be listened on; `host` and `port` say which."""

    def __init__(self, exc: OSError, host: str, port: int) -> None:
        super().__init__(exc.errno, exc.strerror)
        self.host = host
        self.port = port


@dataclass(frozen=True)
class TaskHub:
    """Where the worker's task hub is: a durabletask sidecar's address, or a Durable Task Scheduler endpoint (a
    `http://` one is the scheduler's emulator, reached without a credential).

    Attributes:
        sidecar: The sidecar's `host:port`, used when `scheduler` is None.
        scheduler: The scheduler's endpoint, or None.
        taskhub: The scheduler's task hub.
    """

    sidecar: str = DEFAULT_SIDECAR
    scheduler: str | None = None
    taskhub: str = DEFAULT_TASKHUB

    def describe(self) -> str:
        """Where the task hub is, for the banner and errors."""
        if self.scheduler is None:
            return f"the durabletask sidecar at {self.sidecar}"
        return f"task hub '{self.taskhub}' of the Durable Task Scheduler at {self.scheduler}"

    def worker(self) -> TaskHubGrpcWorker:
        """A worker on the task hub, with `worker_options()`."""
        if self.scheduler is None:
            return TaskHubGrpcWorker(host_address=self.sidecar, **worker_options())
        from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

        return DurableTaskSchedulerWorker(**self._scheduler_arguments(), **worker_options())

    def client(self) -> TaskHubGrpcClient:
        """A client on the task hub."""
        if self.scheduler is None:
            return TaskHubGrpcClient(host_address=self.sidecar)
        from durabletask.azuremanaged.client import DurableTaskSchedulerClient

        return DurableTaskSchedulerClient(**self._scheduler_arguments())

    def _scheduler_arguments(self) -> dict[str, Any]:
        assert self.scheduler is not None
        emulator = self.scheduler.startswith("http://")
        credential = None
        if not emulator:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        return {
            "host_address": self.scheduler,
            "taskhub": self.taskhub,
            "token_credential": credential,
            "secure_channel": not emulator,
        }


def register(target: Any, hosted: AgentWorker) -> None:
    """Register what `--app` names on the worker: an agent, a list of agents, or a function that takes the
    `AgentWorker` and registers them (for `add_agent`'s options).

    Raises:
        ValueError: it is none of these, or an agent is invalid (as `add_agent` says).
    """
    if isinstance(target, SupportsAgentRun):
        hosted.add_agent(target)
    elif isinstance(target, list | tuple) and target and all(isinstance(agent, SupportsAgentRun) for agent in target):
        for agent in target:
            hosted.add_agent(agent)
    elif callable(target):
        target(hosted)
    else:
        raise ValueError(
            f"--app names a {type(target).__name__}; name an agent, a list of agents, or a function that takes the "
            "AgentWorker and registers agents on it (hosted.add_agent(agent, ...))."
        )
    if not hosted.agents:
        raise ValueError("--app registered no agent; the worker would serve nothing.")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host:port`, before anything else starts, so a port in use is said at once.

    Raises:
        ListenError: the address cannot be listened on.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise ListenError(exc, host, port) from None
    return listener


def check_reachable(client: TaskHubGrpcClient, hub: TaskHub) -> None:
    """Ask the task hub for an instance, so an unreachable one is said at startup rather than at the first turn.

    Raises:
        ConnectionError: the task hub did not answer.
    """
    try:
        client.get_orchestration_state(_PROBE_INSTANCE, fetch_payloads=False)
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        raise ConnectionError(
            f"cannot reach {hub.describe()} ({getattr(code, 'name', type(exc).__name__)}). Start it, or name it "
            "with --sidecar (or --scheduler and --taskhub)."
        ) from None


def run_worker(
    target: Any,
    hub: TaskHub,
    listener: socket.socket,
    *,
    auth: AuthHook | None,
    conversation_owners: bool = False,
    mcp: bool = False,
    log_level: str = "info",
    ready: Callable[[list[str]], None] = lambda lines: None,
) -> None:
    """Host the agents `target` names and serve their HTTP API on `listener` until SIGINT or SIGTERM; then stop
    taking requests, let the worker finish the operations it holds, and return.

    Args:
        target: What `--app` names (see `register`).
        hub: The task hub.
        listener: A listening socket (`listen`).
        auth: The HTTP API's auth hook, or None for none.
        conversation_owners: Whether each conversation belongs to the principal the platform's authentication passes
            (`asgi_app(conversation_owners=True)`).
        mcp: Serve every agent as an MCP tool (`AgentWorker(enable_mcp_tool_trigger=...)`).
        log_level: uvicorn's log level.
        ready: Called with the banner's lines once the worker runs, before requests are served.

    Raises:
        ValueError: `target` registers no valid agent.
        ConnectionError: the task hub cannot be reached.
    """
    worker = hub.worker()
    hosted = AgentWorker(worker, enable_mcp_tool_trigger=mcp)
    register(target, hosted)
    client = hub.client()
    try:
        check_reachable(client, hub)
    except ConnectionError:
        client.close()
        listener.close()
        raise
    app = asgi_app(client, hosted, auth=auth, conversation_owners=conversation_owners)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # uvicorn re-raises the signal it stopped on
    try:
        worker.start()
        host, port = listener.getsockname()[:2]
        lines = [
            f"Agent '{name}': {describe_chat_client(getattr(a, 'client', None))}" for name, a in hosted.agents.items()
        ]
        lines += [f"Task hub: {hub.describe()}", f"Listening on http://{host}:{port}"]
        if hosted.mcp_tools.tools:
            names = ", ".join(tool.name for tool in hosted.mcp_tools.tools)
            lines.append(f"MCP tools (Streamable HTTP) at http://{host}:{port}{MCP_PATH}: {names}")
        ready(lines)
        config = uvicorn.Config(
            app, log_level=log_level.lower(), lifespan="off", timeout_graceful_shutdown=GRACE_SECONDS
        )
        server = uvicorn.Server(config)
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        pass
    finally:
        logger.info("Stopping: the worker finishes the operations it holds.")
        worker.stop()
        hosted.close()
        client.close()
        listener.close()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as SIGINT: stop as Ctrl+C does."""
    raise KeyboardInterrupt
