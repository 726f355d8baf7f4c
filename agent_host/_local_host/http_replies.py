"""What the Functions host answers for a classic HTTP function: its status, headers, cookies and body, as sent.

The worker encodes the function's return value with the `http` output converter (a string, or an `HttpResponse` with
its content type filled in and its `Set-Cookie` headers turned into cookies); the host writes that out. Both invokers
end here with the same parts, so the reply does not depend on how the function ran. Knows aiohttp; not functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from http.cookies import Morsel
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

_DROPPED_RESPONSE_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})
_TEXT = "text/plain; charset=utf-8"  # what the host sends with a function's plain string


@dataclass(frozen=True)
class Cookie:
    """One cookie a function set, in the fields the worker hands the host (``RpcHttpCookie``)."""

    name: str
    value: str
    domain: str | None = None
    path: str | None = None
    expires: datetime | None = None
    secure: bool = False
    http_only: bool = False
    same_site: str | None = None  # "lax", "strict", "none" or None (not sent)
    max_age: float | None = None

    @classmethod
    def from_morsel(cls, morsel: Morsel[str]) -> Cookie:
        """A cookie as the worker reads it from a ``Set-Cookie`` header the function set."""
        expires = morsel["expires"]
        return cls(
            name=morsel.key,
            value=morsel.value,
            domain=morsel["domain"] or None,
            path=morsel["path"] or None,
            expires=datetime.strptime(expires, "%a, %d %b %Y %H:%M:%S GMT") if expires else None,
            secure=bool(morsel["secure"]),
            http_only=bool(morsel["httponly"]),
            same_site=str(morsel["samesite"]).lower() or None,
            max_age=float(morsel["max-age"]) if morsel["max-age"] else None,
        )

    def header(self) -> str:
        """The ``Set-Cookie`` value, attributes in the order and spelling ASP.NET Core writes them."""
        parts = [f"{self.name}={self.value}"]
        if self.expires is not None:
            parts.append(f"expires={self.expires.strftime('%a, %d %b %Y %H:%M:%S GMT')}")
        if self.max_age is not None:
            parts.append(f"max-age={int(self.max_age)}")
        if self.domain:
            parts.append(f"domain={self.domain}")
        if self.path:
            parts.append(f"path={self.path}")
        if self.secure:
            parts.append("secure")
        if self.same_site:
            parts.append(f"samesite={self.same_site}")
        if self.http_only:
            parts.append("httponly")
        return "; ".join(parts)


@dataclass(frozen=True)
class HttpReply:
    """A classic HTTP function's output as the host receives it.

    Attributes:
        status: The status code.
        headers: The headers, as the function's response carried them (a content type among them).
        body: The body.
        cookies: The cookies it set.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    cookies: tuple[Cookie, ...] = ()

    @classmethod
    def text(cls, text: str) -> HttpReply:
        """The reply to a function that returned a string: 200 with that text."""
        return cls(200, (("Content-Type", _TEXT),), text.encode("utf-8"))

    @classmethod
    def from_datum(cls, datum: Any) -> HttpReply:
        """The reply in an ``http`` output converter's datum (``azure.functions.meta.Datum``).

        Raises:
            TypeError: the datum is neither a string nor an HTTP response.
        """
        if datum.type == "string":
            return cls.text(str(datum.value))
        if datum.type != "http":
            raise TypeError(f"an HTTP function's output converter gave a {datum.type!r} datum")
        value = datum.value
        body = value["body"].value
        return cls(
            status=int(value["status_code"].value),
            headers=tuple((name, str(header.value)) for name, header in value["headers"].items()),
            body=body.encode("utf-8") if isinstance(body, str) else bytes(body or b""),
            cookies=tuple(Cookie.from_morsel(m) for cookie in value.get("cookies") or () for m in cookie.values()),
        )

    def response(self) -> web.Response:
        """The aiohttp response the host sends."""
        headers: CIMultiDict[str] = CIMultiDict()
        for name, value in self.headers:
            if name.lower() not in _DROPPED_RESPONSE_HEADERS:
                headers.add(name, value)
        for cookie in self.cookies:
            headers.add("Set-Cookie", cookie.header())
        return web.Response(status=self.status, body=self.body, headers=headers)


def joined_headers(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A request's headers as the host hands them to the worker: one value per name, repeats joined by ', '."""
    headers: dict[str, str] = {}
    for name, value in pairs:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers
