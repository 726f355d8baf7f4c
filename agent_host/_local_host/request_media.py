"""The media type a request declares for its body: the webhook API and the MCP endpoint take JSON bodies only.

A page on another origin can POST ``text/plain``, form and multipart bodies without a preflight; refusing what is not
JSON stands behind the ``Origin`` check (``browser_guard``) for those. A body sent without a type is read as JSON.
"""

from __future__ import annotations

from aiohttp import web

JSON_MEDIA_TYPE = "application/json"


def declared_media_type(request: web.BaseRequest) -> str:
    """The ``Content-Type`` the request sent, lower-cased and without parameters; '' when it sent none.

    (aiohttp's ``content_type`` reports ``application/octet-stream`` for a missing header.)
    """
    return request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


def declares_json(request: web.BaseRequest) -> bool:
    """Whether the body is declared JSON (``application/json`` or a ``+json`` type, any parameters), undeclared,
    or absent.

    An undeclared body is read as the JSON the route takes: clients that are not browsers often send none. The type
    of an empty body does not matter (aiohttp's client declares one ``application/octet-stream``).
    """
    media = declared_media_type(request)
    return not request.body_exists or not media or media == JSON_MEDIA_TYPE or media.endswith("+json")


def non_json_problem(request: web.BaseRequest, what: str) -> str | None:
    """Why a body declared as anything but JSON is refused (the caller answers 415 ``unsupported_media_type``).

    Args:
        request: The request.
        what: What takes JSON, for the message (``An entity signal``).

    Returns:
        The message, or None when the body may be read.
    """
    if declares_json(request):
        return None
    return (
        f"{what} takes a JSON body (Content-Type: application/json), not {declared_media_type(request)[:80]!r}; "
        "nothing was done."
    )
