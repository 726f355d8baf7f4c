"""What the local host answers a web browser: requests that name a host it serves, from no other origin's page.

Any page open in the developer's browser can reach a port on 127.0.0.1: "simple" cross-origin POSTs (``text/plain``,
no preflight) run, and a DNS-rebinding page reads answers under a name of its own that resolves to 127.0.0.1. So a
request must name a host this host serves in ``Host`` (421 otherwise) and, when a browser says which page sent it
(``Origin``), come from this host's own origin (403 otherwise). Clients that send no ``Origin`` (curl, SDKs, the
app's own durable client) are not browsers' cross-origin requests and pass. Knows HTTP headers, not routes.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from aiohttp import web

from .errors import error_response
from .listener import Handler
from .log_text import loggable

ALLOWED_HOSTS_SETTING = "AGENT_HOST_ALLOWED_HOSTS"
"""Comma-separated host names the local host answers besides loopback and the one it is bound to; ``*`` for any."""

ANY_HOST = "*"
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
_ORIGIN_SCHEMES = frozenset({"http", "https"})


def allowed_hosts_from_settings(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names ``AGENT_HOST_ALLOWED_HOSTS`` lists (lower-cased, without a trailing dot); none when unset."""
    env = os.environ if environ is None else environ
    raw = env.get(ALLOWED_HOSTS_SETTING) or ""
    return tuple(_host_name(part) for part in raw.split(",") if part.strip())


class BrowserGuard:
    """Refuses requests for host names this host does not serve, and requests other origins' pages sent.

    Args:
        bound_host: The address or name the listener is bound to (``127.0.0.1``, ``0.0.0.0``, ``myhost``...).
        allowed_hosts: More names to answer; a leading dot (``.example.com``) takes every subdomain, ``*`` any name.
    """

    def __init__(self, bound_host: str, allowed_hosts: Sequence[str] = ()) -> None:
        self._bound = _host_name(bound_host)
        self._allowed = tuple(_host_name(name) for name in allowed_hosts)

    def guard(self, handler: Handler) -> Handler:
        """Wrap a listener's handler so refused requests never reach it."""

        async def guarded(request: web.BaseRequest) -> web.StreamResponse:
            return self.refusal(request) or await handler(request)

        return guarded

    def refusal(self, request: web.BaseRequest) -> web.Response | None:
        """The answer to a request this host must not serve, or None when it may proceed.

        Returns:
            400 ``invalid_host`` for a missing or malformed ``Host``, 421 ``host_not_allowed`` for a name this host
            does not serve, 403 ``cross_origin_request`` when ``Origin`` is not this host's own origin.
        """
        host = request.headers.get("Host", "")
        authority = _authority(host)
        if authority is None:
            return error_response(
                400, "invalid_host", "The request needs a Host header naming this host, such as 127.0.0.1:7071."
            )
        name = authority[0]
        if not self.serves(name):
            return error_response(
                421,
                "host_not_allowed",
                f"This host does not answer requests for {loggable(name)[:100]!r}: it answers loopback names "
                f"(localhost, 127.0.0.1, [::1]) and the address it is bound to. To reach it under another name "
                f"(a proxy, a tunnel), list the name in {ALLOWED_HOSTS_SETTING}.",
            )
        origin = request.headers.get("Origin")
        if origin is not None and _authority_of_origin(origin) != authority:
            return error_response(
                403,
                "cross_origin_request",
                f"Requests sent by a page from another origin are refused (Origin {loggable(origin)[:100]!r}, this "
                f"host is {loggable(host)[:100]!r}): a web page must not drive this host. Use a client that is not "
                "a browser (curl, an SDK), or the inspector this host serves at /api/inspector.",
            )
        return None

    def serves(self, name: str) -> bool:
        """Whether a host name (lower-case, no port, no brackets) is one this host answers."""
        if ANY_HOST in self._allowed or name == self._bound or _is_loopback_name(name):
            return True
        if any(name == allowed or (allowed.startswith(".") and name.endswith(allowed)) for allowed in self._allowed):
            return True
        # Bound to every interface: any of the machine's addresses reaches it. An address is never a rebinding
        # target: a page can only have an address as its origin by being served from it.
        return self._bound in _WILDCARD_BINDS and _ip_address(name) is not None


def _host_name(text: str) -> str:
    """A host name for comparison: lower-case, no brackets, no trailing dot."""
    return text.strip().strip("[]").rstrip(".").lower()


def _authority(host: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` header value; None when it is missing or malformed."""
    if not host or any(c in host for c in "/?#@\\ ") or not host.isascii():
        return None
    try:
        parts = urlsplit(f"//{host}")
        port = parts.port
    except ValueError:
        return None
    return (_host_name(parts.hostname), port) if parts.hostname else None


def _authority_of_origin(origin: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of an ``Origin`` header value; None for ``null`` or anything but an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        if parts.scheme.lower() not in _ORIGIN_SCHEMES or parts.path or parts.query or parts.username:
            return None
        port = parts.port
    except ValueError:
        return None
    return (_host_name(parts.hostname), port) if parts.hostname else None


def _is_loopback_name(name: str) -> bool:
    """``localhost`` or a loopback address. (Not ``*.localhost``: not every resolver keeps those off DNS.)"""
    if name == "localhost":
        return True
    address = _ip_address(name)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address is not None and address.is_loopback


def _ip_address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return None
