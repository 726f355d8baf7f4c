"""The local host's public port: the app's HTTP triggers, and the durable webhook API for callers with the key.

Requests are matched against the functions' route templates, checked for the function key and handed to the functions
through the invoker, as the Functions host hands them to the worker.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Callable

from aiohttp import web

from .durable_api import WEBHOOK_SEGMENTS, DurableWebhookApi
from .errors import error_response
from .functions import HttpRoute
from .invocation import FunctionInvoker, HttpCall, InvocationFailedError
from .invocation_context import Invocation
from .listener import read_body
from .mcp_endpoint import MCP_SEGMENTS, McpEndpoint
from .orchestration_api import ManagementUrls
from .route_template import split_path

logger = logging.getLogger(__name__)

_KEYED_AUTH_LEVELS = frozenset({"function", "admin"})


class LocalHttpServer:
    """The public listener's handler: routes requests to the app's HTTP functions and, with a key, the webhook API."""

    def __init__(
        self,
        routes: list[HttpRoute],
        durable_api: DurableWebhookApi,
        *,
        route_prefix: str,
        function_key: str | None,
        rpc_base_url: Callable[[], str],
        invoker: FunctionInvoker,
        client_urls: ManagementUrls | None = None,
        mcp: McpEndpoint | None = None,
    ) -> None:
        """Configure the server.

        Args:
            routes: The app's HTTP functions.
            durable_api: Handler for ``/runtime/webhooks/durabletask/...``.
            route_prefix: Prefix of every function route (``api`` by default; empty for none).
            function_key: Key required by FUNCTION/ADMIN routes; None disables key checks.
            rpc_base_url: Returns the private webhook base URL handed to durable clients (known only once bound).
            invoker: What runs the functions.
            client_urls: Builds the ``creationUrls``/``managementUrls`` templates of the durable client binding;
                None hands out empty ones.
            mcp: The MCP extension's endpoint (``/runtime/webhooks/mcp``), when the app has MCP tools.
        """
        self.routes = routes
        self._durable_api = durable_api
        self._prefix = [s.lower() for s in route_prefix.strip("/").split("/")] if route_prefix.strip("/") else []
        self.route_prefix = "/".join(self._prefix)
        self._function_key = function_key
        self._rpc_base_url = rpc_base_url
        self._invoker = invoker
        self._client_urls = client_urls
        self._mcp = mcp

    def describe_routes(self, base_url: str) -> list[str]:
        """List the HTTP routes for the startup banner.

        Args:
            base_url: The host's base URL.

        Returns:
            One line per function: methods, URL and function name.
        """
        lines = []
        prefix = f"/{self.route_prefix}" if self.route_prefix else ""
        for route in sorted(self.routes, key=lambda r: r.route.template):
            methods = ",".join(sorted(route.methods)) if route.methods else "ANY"
            path = f"/{route.route.template}" if route.route.template else ""
            lines.append(f"  {methods:<14} {base_url}{prefix}{path}  [{route.function_name}]")
        return lines

    def client_binding(self, task_hub: str) -> str:
        """The durable client binding JSON a function receives (``DurableOrchestrationClient`` reads it).

        Args:
            task_hub: The task hub the binding names.

        Returns:
            The binding: the private ``rpcBaseUrl``, and management and creation URL templates on the public port
            (with ``INSTANCEID`` where the id goes, and the key when one is configured, as on Azure).
        """
        urls = self._client_urls
        return json.dumps(
            {
                "taskHubName": task_hub,
                "creationUrls": urls.creation(task_hub) if urls is not None else {},
                "managementUrls": urls.management(task_hub) if urls is not None else {},
                "rpcBaseUrl": self._rpc_base_url(),
            }
        )

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """Serve one request on the public listener: the webhook API (with a key) or a function route.

        Args:
            request: The incoming request.

        Returns:
            The response.
        """
        path = split_path(request.rel_url.raw_path)
        if [s.lower() for s in path[: len(WEBHOOK_SEGMENTS)]] == list(WEBHOOK_SEGMENTS):
            return await self._public_webhook(request, path[len(WEBHOOK_SEGMENTS) :])
        if self._mcp is not None and [s.lower() for s in path[: len(MCP_SEGMENTS)]] == list(MCP_SEGMENTS):
            refusal = self._webhook_refusal(request, "The MCP endpoint")
            return refusal or await self._mcp.handle(request, path[len(MCP_SEGMENTS) :])
        if [s.lower() for s in path[: len(self._prefix)]] != self._prefix:
            return error_response(404, "not_found", f"No function serves {request.path}.")
        path = path[len(self._prefix) :]

        matches = [(route, params) for route in self.routes if (params := route.route.match(path)) is not None]
        if not matches:
            return error_response(404, "not_found", f"No function serves {request.path}.")
        method = request.method.upper()
        allowed = [(r, p) for r, p in matches if r.methods is None or method in r.methods]
        if not allowed:
            # Matches with methods=None accept any method, so every match here names its methods.
            methods = sorted({m for r, _ in matches for m in (r.methods or ())})
            return error_response(
                405,
                "method_not_allowed",
                f"{method} is not allowed on {request.path}; the functions serving it take {', '.join(methods)}.",
                headers={"Allow": ", ".join(methods)},
            )
        route, params = min(allowed, key=lambda match: match[0].route.rank)
        if route.auth_level in _KEYED_AUTH_LEVELS and not self._has_key(request):
            return error_response(
                401, "unauthorized", "This function needs a key in the x-functions-key header or the code parameter."
            )
        return await self._invoke(route, params, request)

    async def _public_webhook(self, request: web.BaseRequest, segments: list[str]) -> web.StreamResponse:
        """Serve the durable webhook API on the public port: only with the function key, or, without one, to loopback.

        On Azure this API needs the extension's system key; the app's own durable client uses the private listener.

        Args:
            request: The incoming request.
            segments: Path segments after ``runtime/webhooks/durabletask``.

        Returns:
            The webhook API's answer, 401 without the key, or 403 for a remote client when no key is configured.
        """
        refusal = self._webhook_refusal(request, "The durable webhook API")
        return refusal or await self._durable_api.handle(request, segments)

    def _webhook_refusal(self, request: web.BaseRequest, api: str) -> web.Response | None:
        """Refuse a webhook request without the key (401), or from a remote client when no key is set (403).

        On Azure an extension's webhooks need its system key; locally the function key stands in for it.

        Args:
            request: The incoming request.
            api: What is refused, for the message.

        Returns:
            The refusal, or None when the request may proceed.
        """
        if self._function_key is not None and not self._has_key(request):
            return error_response(
                401,
                "unauthorized",
                f"{api} needs the function key in the x-functions-key header or the code parameter.",
            )
        if self._function_key is None and not _is_loopback(request.remote):
            return error_response(403, "forbidden", f"{api} accepts only loopback clients when no function key is set.")
        return None

    def _has_key(self, request: web.BaseRequest) -> bool:
        """Tell whether the request carries the function key (always true when none is configured).

        Args:
            request: The incoming request.

        Returns:
            True if the request may proceed.
        """
        if self._function_key is None:
            return True
        expected = self._function_key.encode()
        candidates = (request.headers.get("x-functions-key"), request.query.get("code"))
        return any(c is not None and hmac.compare_digest(c.encode(), expected) for c in candidates)

    async def _invoke(self, route: HttpRoute, params: dict[str, str], request: web.BaseRequest) -> web.StreamResponse:
        """Hand the request to the function through the invoker.

        Args:
            route: The matched route.
            params: Route parameters.
            request: The incoming request.

        Returns:
            The function's response, or a 500 JSON error if it failed.
        """
        call = HttpCall(request, await read_body(request), params, Invocation.for_request(request.headers))
        client = self.client_binding(route.task_hub) if route.client_param is not None else None
        try:
            return await self._invoker.call_http(route, call, client)
        except InvocationFailedError as failure:
            logger.error("function %r failed: %s\n%s", route.function_name, failure.message, failure.details)
            return error_response(500, "internal_error", "The function failed; see the host log.")


def _is_loopback(remote: str | None) -> bool:
    """Tell whether a peer address is a loopback address.

    Args:
        remote: The peer address as aiohttp reports it.

    Returns:
        True for 127.0.0.0/8, ::1 and IPv4-mapped loopback; False for anything else or unknown peers.
    """
    if not remote:
        return False
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback
