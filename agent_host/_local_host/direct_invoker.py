"""The direct invoker: the local host calls the app's functions itself, as the Python worker would.

Used where the worker's own library cannot run (Python 3.11 and 3.12) or when asked for. It does what the worker does
around a call, with the same parts: the app is refused at startup for what the worker refuses at indexing
(`indexing_rules`), inputs are decoded and return values encoded by the `azure-functions` converters the worker uses,
a `context` parameter gets the worker's context, synchronous functions run on threads and coroutine functions on the
host's loop, and a return value the worker cannot encode fails the invocation.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import azure.functions as func
from aiohttp import web
from azure.functions import meta

from .activities import ActivityClients, ActivityFunction, ActivityOutcome
from .http_replies import HttpReply
from .http_streams import send_response, starlette_request, streams_response
from .indexing_rules import refuse_unindexable
from .invocation import HttpCall, InvocationFailedError, InvocationMode
from .invocation_context import InvocationContext, function_directory

if TYPE_CHECKING:
    from .._event_loop import AgentEventLoop
    from .functions import HttpRoute
    from .mcp_tools import McpToolFunction

_ENTITY_TRIGGER = "entityTrigger"
_ORCHESTRATION_TRIGGER = "orchestrationTrigger"
_ACTIVITY_TRIGGER = "activityTrigger"
_MCP_TOOL_TRIGGER = "mcpToolTrigger"


def failure_of(exc: BaseException) -> InvocationFailedError:
    """A function's exception as the worker reports a failed invocation: ``Type: text`` and the traceback."""
    return InvocationFailedError(f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc)))


def _converter(binding: str) -> Any:
    return func.get_binding_registry().get(binding)


class DirectInvoker:
    """Calls the functions in this process, with the worker's converters and rules."""

    mode = InvocationMode.DIRECT

    def __init__(self, functions: Sequence[func.Function], *, why: str) -> None:
        """Refuse the app as the worker would at indexing.

        Args:
            functions: The app's indexed functions.
            why: Why functions run directly (for the banner).

        Raises:
            ValueError: a function the worker would refuse to load.
        """
        refuse_unindexable(functions)
        self._functions = {f.get_function_name(): f.get_user_function() for f in functions}
        self.description = f"direct calls with the worker's converters, {why}"

    async def start(self) -> None:
        """Nothing to start."""

    async def stop(self) -> None:
        """Nothing to stop."""

    def entity_function(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        """The entity function, decoding the batch and encoding the response with the trigger's converter."""
        return self._durable_call(function_name, trigger_param, _ENTITY_TRIGGER)

    def orchestrator_handle(self, function_name: str, trigger_param: str) -> Callable[[str], str]:
        """The orchestrator, decoding the context and encoding the state with the trigger's converter."""
        return self._durable_call(function_name, trigger_param, _ORCHESTRATION_TRIGGER)

    def _durable_call(self, function_name: str, trigger_param: str, binding: str) -> Callable[[str], str]:
        user_function = self._functions[function_name]
        converter = _converter(binding)

        def call(payload: str) -> str:
            try:
                value = converter.decode(meta.Datum(payload, "string"), trigger_metadata=None)
                result = user_function(**{trigger_param: value})
                return str(converter.encode(result, expected_type=None).value)
            except Exception as exc:  # the host hears the worker's "Type: message" (an orchestrator's state in it)
                raise failure_of(exc) from exc

        return call

    def run_activity(
        self,
        activity: ActivityFunction,
        input_text: str | None,
        loop: AgentEventLoop,
        clients: ActivityClients | None,
    ) -> ActivityOutcome:
        """Decode the input (``df_loads``), call the activity, encode what it returned (``df_dumps``).

        A coroutine activity runs on the agents' loop, or with a durable client on the host's loop (the SDK's client
        keeps one HTTP session, bound to the loop that opened it, as the worker's one loop is on Azure).
        """
        converter = _converter(_ACTIVITY_TRIGGER)
        try:
            datum = meta.Datum(input_text if input_text is not None else "null", "string")
            arguments = {activity.parameter: converter.decode(datum, trigger_metadata=None)}
            if activity.client_param is not None:
                if clients is None:
                    raise RuntimeError(
                        f"activity {activity.name!r} needs a durable client, which the host has not bound"
                    )
                arguments[activity.client_param] = clients.binding(activity.task_hub)
            if activity.is_async:
                coroutine = activity.user_function(**arguments)
                result = (
                    clients.run(coroutine) if activity.client_param is not None and clients else loop.run(coroutine)
                )
            else:
                result = activity.user_function(**arguments)
            encoded = converter.encode(result, expected_type=None)
        except Exception as exc:  # the activity failed: the orchestrator receives the failure
            return ActivityOutcome(error=failure_of(exc))
        return ActivityOutcome(result_text=str(encoded.value))

    async def call_tool(self, tool: McpToolFunction, context: str, client_binding: str) -> str:
        """Call the tool function with the invocation context JSON; encode its return value as the worker does."""
        arguments: dict[str, Any] = {tool.context_param: context}
        if tool.client_param is not None:
            arguments[tool.client_param] = client_binding
        value = await _call(tool.user_function, tool.is_async, arguments)
        datum = _converter(_MCP_TOOL_TRIGGER).encode(value, expected_type=None)
        return datum.value.decode("utf-8") if isinstance(datum.value, bytes) else str(datum.value)

    async def call_http(self, route: HttpRoute, call: HttpCall, client_binding: str | None) -> web.StreamResponse:
        """Call the HTTP function with the request the worker would build and answer with what it returned.

        Raises:
            InvocationFailedError: the function raised, or returned what the worker cannot encode.
        """
        request: Any = (
            starlette_request(call.request, call.body, call.route_params)
            if route.starlette_request
            else _converter("httpTrigger").decode(_request_datum(call), trigger_metadata=None)
        )
        arguments: dict[str, Any] = {route.request_param: request}
        if route.client_param is not None:
            arguments[route.client_param] = client_binding
        if route.context_param:
            directory = function_directory(route.user_function)
            arguments["context"] = InvocationContext(route.function_name, directory, call.invocation)
        try:
            result = await _call(route.user_function, route.is_async, arguments)
            if route.starlette_request:
                return await send_response(streams_response(result), call.request)
            return HttpReply.from_datum(_encoded_http(result)).response()
        except Exception as exc:
            raise failure_of(exc) from exc


async def _call(function: Callable[..., Any], is_async: bool, arguments: dict[str, Any]) -> Any:
    """Await a coroutine function; run anything else on a thread, as the worker does (its result is not awaited)."""
    if is_async:
        return await function(**arguments)
    return await asyncio.to_thread(function, **arguments)


def _encoded_http(result: Any) -> meta.Datum:
    """A classic HTTP function's return value through the ``http`` output converter, as the worker encodes it.

    Raises:
        TypeError: the converter takes only a string or an ``HttpResponse`` (None and bytes included, the worker
            fails the invocation and the host answers 500); the message is the worker's.
    """
    try:
        return _converter("http").encode(result, expected_type=None)
    except NotImplementedError:
        raise TypeError(
            f'unable to encode outgoing TypedData: unsupported type "http" for Python type "{type(result).__name__}"'
        ) from None


def _request_datum(call: HttpCall) -> meta.Datum:
    """The request as the host sends it to the worker (``RpcHttp``), as the worker's converter reads it."""

    def strings(values: dict[str, str]) -> dict[str, meta.Datum]:
        return {name: meta.Datum(value, "string") for name, value in values.items()}

    return meta.Datum(
        {
            "method": meta.Datum(call.method, "string"),
            "url": meta.Datum(call.url, "string"),
            "headers": strings(call.headers),
            "query": strings(call.query),
            "params": strings(call.route_params),
            "body": meta.Datum(call.body, "bytes"),
        },
        "http",
    )
