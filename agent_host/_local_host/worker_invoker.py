"""The worker invoker: every invocation goes through the Azure Functions Python worker's own code, in this process.

`azure-functions-runtime` (Python 3.13+) is the worker's library half; the Functions host talks to it over gRPC. Here
the local host plays the host's part of that conversation in-process, through the library's `handle_event` entry
points: `worker_init_request`, `function_load_request` and `invocation_request`, with the host's message classes
(`worker_protos`). So the worker's own indexing, binding converters, invocation and HTTP-streams hand-off run exactly
as under `func start` and on Azure. For HTTP streams the request also goes, as the host sends it, to the web server
the worker starts (`HttpUri`), and its response is streamed back.

The library keeps one app per process (its function registry and HTTP-streams state are module globals), as the worker
process does: the newest invoker owns it, and an older one still running refuses to invoke rather than call another
app's functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp
import azure.functions as func
from aiohttp import web

from .._deps.functions_runtime_private import set_http_streams, worker_function_registry
from .activities import ActivityClients, ActivityFunction, ActivityOutcome
from .http_replies import Cookie, HttpReply
from .indexing_rules import worker_refusal
from .invocation import HttpCall, InvocationFailedError, InvocationMode
from .invocation_context import Invocation
from .worker_protos import function_rpc

if TYPE_CHECKING:
    from .._event_loop import AgentEventLoop
    from .functions import HttpRoute
    from .mcp_tools import McpToolFunction

logger = logging.getLogger(__name__)

HOST_VERSION = "4.0.0-agent-host"
"""What the local host calls itself in ``WorkerInitRequest.host_version``."""

_WORKER_LOGGER = "azure.functions"
_INVOCATION_ID_HEADER = "x-ms-invocation-id"
_HTTP_URI = "HttpUri"
# Hop-by-hop headers, and the ones the local host's listener writes itself.
_UNFORWARDED = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"})
_SERVER_START_SECONDS = 10.0

_lock = threading.Lock()
_owner: WorkerInvoker | None = None


class _Request:
    """What ``handle_event`` reads: the host's message, and the properties the worker's gRPC half would give it."""

    def __init__(self, message: Any, protos: Any) -> None:
        self.request = message
        self.properties = {"protos": protos, "host": "127.0.0.1"}


class WorkerInvoker:
    """Hands each invocation to the worker library running in this process."""

    mode = InvocationMode.WORKER

    def __init__(self, functions: Sequence[func.Function], *, scratch_dir: Path) -> None:
        """Index the app with the worker's own indexing (``loader.process_indexed_function``).

        Indexing runs here, not in ``worker_init_request``: the worker finds the app by importing ``function_app.py``,
        while the local host is given the app object and has already listed its functions (which a ``DFApp`` allows
        once). ``python -m agent_host serve`` checks the module the way the worker's loader does (app_module.py).

        Args:
            functions: The app's indexed functions.
            scratch_dir: Handed to the worker as the app's directory: it holds no ``function_app.py``, so the worker
                does not import one.

        Raises:
            ValueError: the worker refuses the app (its ``FunctionLoadError``, naming the function).
        """
        global _owner
        from azure_functions_runtime import handle_event, loader
        from azure_functions_runtime.bindings import meta
        from azure_functions_runtime.version import VERSION

        self._handle_event = handle_event
        self._protos = function_rpc()
        self._scratch_dir = scratch_dir
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server_tasks: set[asyncio.Task[Any]] = set()
        self._http_uri: str | None = None
        self._session: aiohttp.ClientSession | None = None
        self.description = (
            f"the Azure Functions Python worker's own code (azure-functions-runtime {VERSION}, in-process)"
        )
        with _lock:
            _owner = self
            _tell_http_streams(functions)
        if logging.getLogger(_WORKER_LOGGER).level == logging.NOTSET:
            # The worker logs a line per invocation at INFO (on Azure they are system logs); here they would drown
            # the access log.
            logging.getLogger(_WORKER_LOGGER).setLevel(logging.WARNING)
        meta.load_binding_registry()
        try:
            results, _ = loader.process_indexed_function(
                self._protos, worker_function_registry(), functions, str(scratch_dir)
            )
        except Exception as exc:  # FunctionLoadError and anything else the worker's indexing raises
            reason = str(exc) if type(exc).__name__ == "FunctionLoadError" else _text(exc)
            raise worker_refusal(reason, functions) from None
        self._metadata = list(results)
        self._ids = {metadata.name: metadata.function_id for metadata in self._metadata}

    async def start(self) -> None:
        """Initialize the worker on this loop (and its HTTP-streams web server) and load every function.

        Raises:
            RuntimeError: the worker failed to initialize or to load a function, or another app took it over.
        """
        from azure_functions_runtime.utils.threadpool import start_threadpool_executor

        self._check_owner()
        self._loop = asyncio.get_running_loop()
        start_threadpool_executor()
        protos = self._protos
        before = asyncio.all_tasks()
        init = protos.WorkerInitRequest(
            host_version=HOST_VERSION,
            function_app_directory=str(self._scratch_dir / "worker"),
            worker_directory=str(Path(sys.prefix)),
        )
        response = await self._handle_event.worker_init_request(
            _Request(protos.StreamingMessage(worker_init_request=init), protos)
        )
        self._server_tasks = asyncio.all_tasks() - before
        _raise_for_status(response.result, "initialize")
        self._http_uri = response.capabilities.get(_HTTP_URI) or None
        if self._http_uri is not None:
            await _wait_listening(self._http_uri)
            self._session = aiohttp.ClientSession(
                auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)
            )
        for metadata in self._metadata:
            load = protos.FunctionLoadRequest(function_id=metadata.function_id, metadata=metadata)
            loaded = await self._handle_event.function_load_request(
                _Request(protos.StreamingMessage(function_load_request=load), protos)
            )
            _raise_for_status(loaded.result, f"load {metadata.name}")

    async def stop(self) -> None:
        """Stop the worker's web server and thread pool, and let the next app have the worker."""
        global _owner
        from azure_functions_runtime.utils.threadpool import stop_threadpool_executor

        if self._session is not None:
            await self._session.close()
        for task in self._server_tasks:
            await _stop_web_server(task)
        with _lock:
            owned, _owner = _owner is self, (None if _owner is self else _owner)
        if owned:
            await asyncio.to_thread(stop_threadpool_executor)

    # -- the shapes of invocation ------------------------------------------------------------------------------

    def entity_function(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        """The entity: the batch as a string input, the response from ``return_value``."""
        return self._string_call(function_name, trigger_param)

    def orchestrator_handle(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        """The orchestrator: the history as a string input, the state from ``return_value``."""
        return self._string_call(function_name, trigger_param)

    def _string_call(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        def call(payload: str) -> str:
            response = self._from_thread(function_name, {trigger_param: self._protos.TypedData(string=payload)})
            return _text_of(response.return_value)

        return call

    def run_activity(
        self,
        activity: ActivityFunction,
        input_text: str | None,
        loop: AgentEventLoop,
        clients: ActivityClients | None,
    ) -> ActivityOutcome:
        """The activity: its input (and client binding) as strings, the encoded result from ``return_value``."""
        inputs = {activity.parameter: self._protos.TypedData(string=input_text if input_text is not None else "null")}
        try:
            if activity.client_param is not None:
                if clients is None:
                    raise InvocationFailedError(
                        f"RuntimeError: activity {activity.name!r} needs a durable client, which the host has not "
                        "bound",
                        "",
                    )
                inputs[activity.client_param] = self._protos.TypedData(string=clients.binding(activity.task_hub))
            response = self._from_thread(activity.name, inputs)
        except InvocationFailedError as failure:
            return ActivityOutcome(error=failure)
        return ActivityOutcome(result_text=_text_of(response.return_value))

    async def call_tool(self, tool: McpToolFunction, context: str, client_binding: str) -> str:
        """The tool: the invocation context JSON as a string, its encoded return value as the extension gets it."""
        inputs = {tool.context_param: self._protos.TypedData(string=context)}
        if tool.client_param is not None:
            inputs[tool.client_param] = self._protos.TypedData(string=client_binding)
        response = await self._invoke(tool.function_name, inputs, Invocation())
        return _text_of(response.return_value)

    async def call_http(self, route: HttpRoute, call: HttpCall, client_binding: str | None) -> web.StreamResponse:
        """The HTTP function: the request as ``RpcHttp``; for HTTP streams, also to the worker's web server."""
        protos = self._protos
        rpc_http = protos.RpcHttp(
            method=call.method,
            url=call.url,
            headers=call.headers,
            query=call.query,
            params=call.route_params,
            body=protos.TypedData(bytes=call.body),
        )
        inputs = {route.request_param: protos.TypedData(http=rpc_http)}
        if route.client_param is not None and client_binding is not None:
            inputs[route.client_param] = protos.TypedData(string=client_binding)
        if route.starlette_request:
            return await self._stream(route, call, inputs)
        response = await self._invoke(route.function_name, inputs, call.invocation)
        return _reply_of(response.return_value).response()

    async def _stream(self, route: HttpRoute, call: HttpCall, inputs: dict[str, Any]) -> web.StreamResponse:
        """Send the request to the worker's web server while the invocation runs; stream its answer to the client."""
        if self._session is None or self._http_uri is None:
            raise InvocationFailedError(
                "RuntimeError: the worker did not start its HTTP-streams server (no HttpUri capability)", ""
            )
        invocation = asyncio.ensure_future(self._invoke(route.function_name, inputs, call.invocation))
        forwarded = asyncio.ensure_future(self._forward(call))
        try:
            done, _ = await asyncio.wait({invocation, forwarded}, return_when=asyncio.FIRST_COMPLETED)
            if forwarded in done and forwarded.exception() is not None:
                raise InvocationFailedError(_text(forwarded.exception()), "")  # type: ignore[arg-type]
            await invocation
            upstream = await forwarded
        except BaseException:
            for task in (invocation, forwarded):
                task.cancel()
            if forwarded.done() and not forwarded.cancelled() and forwarded.exception() is None:
                forwarded.result().close()
            raise
        try:
            answer = web.StreamResponse(status=upstream.status)
            for name, value in upstream.headers.items():
                if name.lower() not in _UNFORWARDED:
                    answer.headers.add(name, value)
            await answer.prepare(call.request)
            with contextlib.suppress(OSError):  # the client went away: stop sending, as the host does
                async for chunk in upstream.content.iter_any():
                    await answer.write(chunk)
                await answer.write_eof()
            return answer
        finally:
            upstream.close()

    async def _forward(self, call: HttpCall) -> aiohttp.ClientResponse:
        assert self._session is not None and self._http_uri is not None
        headers = [(k, v) for k, v in call.request.headers.items() if k.lower() not in _UNFORWARDED]
        headers.append((_INVOCATION_ID_HEADER, call.invocation.invocation_id))
        url = self._http_uri.rstrip("/") + call.request.rel_url.raw_path_qs
        return await self._session.request(call.method, url, headers=headers, data=call.body, allow_redirects=False)

    # -- talking to the worker ---------------------------------------------------------------------------------

    def _from_thread(self, function_name: str, inputs: dict[str, Any]) -> Any:
        """Invoke from a worker thread of the local host (entity batches, episodes, activities) on the worker's loop."""
        if self._loop is None:
            raise RuntimeError("the worker has not been started; start the local host first")
        coroutine = self._invoke(function_name, inputs, Invocation())
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _invoke(self, function_name: str, inputs: dict[str, Any], invocation: Invocation) -> Any:
        """One ``InvocationRequest``; the ``InvocationResponse`` when it succeeded.

        Raises:
            InvocationFailedError: the worker reports the invocation failed (with its message and stack trace).
        """
        self._check_owner()
        protos = self._protos
        request = protos.InvocationRequest(
            invocation_id=invocation.invocation_id,
            function_id=self._ids[function_name],
            input_data=[protos.ParameterBinding(name=name, data=data) for name, data in inputs.items()],
            trace_context=protos.RpcTraceContext(
                trace_parent=invocation.trace_parent, trace_state=invocation.trace_state
            ),
            retry_context=protos.RetryContext(retry_count=0, max_retry_count=0),
        )
        response = await self._handle_event.invocation_request(
            _Request(protos.StreamingMessage(invocation_request=request), protos)
        )
        if response.result.status != protos.StatusResult.Success:
            raise InvocationFailedError(response.result.exception.message, response.result.exception.stack_trace)
        return response

    def _check_owner(self) -> None:
        if _owner is not self:
            raise RuntimeError(
                "Another local host in this process has loaded its app into the Python worker, which holds one app "
                "per process: stop this host, or run one of them with AGENT_HOST_INVOCATION=direct."
            )


def _tell_http_streams(functions: Sequence[func.Function]) -> None:
    """Tell the worker whether this app uses HTTP streams: whether its HTTP functions take FastAPI's request.

    The worker decides once per process, from whether the FastAPI extension was ever imported, which is right for the
    one app of a worker process and not for a process that hosts app after app (tests). The two differ only for an
    app that imports the extension and declares no function with its request, which the worker would refuse.
    """
    from .indexing_rules import uses_http_streams

    set_http_streams(uses_http_streams(functions))


def _raise_for_status(result: Any, what: str) -> None:
    if result.status != function_rpc().StatusResult.Success:
        raise RuntimeError(f"The Python worker failed to {what}: {result.exception.message}")


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _text_of(data: Any) -> str:
    """The text in a ``TypedData`` (string, JSON or UTF-8 bytes); '' when it holds nothing."""
    kind = data.WhichOneof("data")
    if kind in ("string", "json"):
        return str(getattr(data, kind))
    if kind in ("bytes", "stream"):
        return bytes(getattr(data, kind)).decode("utf-8")
    return ""


def _bytes_of(data: Any) -> bytes:
    kind = data.WhichOneof("data")
    if kind in ("bytes", "stream"):
        return bytes(getattr(data, kind))
    return _text_of(data).encode("utf-8")


def _reply_of(data: Any) -> HttpReply:
    """The host's reply for a classic HTTP function's ``return_value``: an ``RpcHttp``, or a plain string."""
    if data.WhichOneof("data") != "http":
        return HttpReply.text(_text_of(data))
    http = data.http
    same_site = {1: "lax", 2: "strict", 3: "none"}
    cookies = tuple(
        Cookie(
            name=cookie.name,
            value=cookie.value,
            domain=cookie.domain.value if cookie.HasField("domain") else None,
            path=cookie.path.value if cookie.HasField("path") else None,
            expires=cookie.expires.value.ToDatetime() if cookie.HasField("expires") else None,
            secure=cookie.HasField("secure") and cookie.secure.value,
            http_only=cookie.HasField("http_only") and cookie.http_only.value,
            same_site=same_site.get(cookie.same_site),
            max_age=cookie.max_age.value if cookie.HasField("max_age") else None,
        )
        for cookie in http.cookies
    )
    return HttpReply(int(http.status_code or 200), tuple(http.headers.items()), _bytes_of(http.body), cookies)


async def _wait_listening(http_uri: str) -> None:
    """Wait until the worker's web server accepts connections (the worker reports its address before it listens)."""
    address = urlsplit(http_uri)
    deadline = asyncio.get_running_loop().time() + _SERVER_START_SECONDS
    while True:
        try:
            _, writer = await asyncio.open_connection(address.hostname, address.port)
        except OSError:
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"the worker's HTTP-streams server at {http_uri} did not start") from None
            await asyncio.sleep(0.01)
            continue
        writer.close()
        return


async def _stop_web_server(task: asyncio.Task[Any]) -> None:
    """Stop the worker's web server (uvicorn) gracefully: its listening socket closes, open streams end."""
    coroutine = task.get_coro()
    frame = getattr(coroutine, "cr_frame", None)
    server = frame.f_locals.get("server") if frame is not None else None
    if server is not None and hasattr(server, "should_exit"):
        server.should_exit = True
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 5)
    if not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
