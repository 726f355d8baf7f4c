"""The inspector's page: one HTML document with its stylesheet and script inlined, from the files in `static/`.

Everything ships in the package and nothing is fetched from elsewhere: the Content-Security-Policy allows only the
inlined script and style (by hash) and requests to the app itself. One document means one request carries the
function key; the script sends it on its own requests.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from dataclasses import dataclass
from importlib import resources

_STATIC = "static"
_STYLE_SLOT = "/*inspector.css*/"
_SCRIPT_SLOT = "/*inspector.js*/"


@dataclass(frozen=True)
class InspectorPage:
    """The assembled document and the headers it is served with."""

    html: bytes
    headers: dict[str, str]


@functools.cache
def inspector_page() -> InspectorPage:
    """The page, assembled once per process from the packaged files.

    Raises:
        RuntimeError: a packaged file would end the element it is inlined into, or the template lacks a slot.
    """
    files = resources.files(__package__).joinpath(_STATIC)
    template = files.joinpath("inspector.html").read_text(encoding="utf-8")
    style = files.joinpath("inspector.css").read_text(encoding="utf-8")
    script = files.joinpath("inspector.js").read_text(encoding="utf-8")
    for name, text, closing in (("inspector.css", style, "</style"), ("inspector.js", script, "</script")):
        if closing in text.lower():
            raise RuntimeError(f"{name} contains {closing!r}, which would end the element it is inlined into.")
    if template.count(_STYLE_SLOT) != 1 or template.count(_SCRIPT_SLOT) != 1:
        raise RuntimeError(f"inspector.html needs exactly one {_STYLE_SLOT} and one {_SCRIPT_SLOT}.")
    html = template.replace(_STYLE_SLOT, style).replace(_SCRIPT_SLOT, script)
    policy = "; ".join(
        (
            "default-src 'none'",
            f"script-src '{_digest(script)}'",
            f"style-src '{_digest(style)}'",
            "connect-src 'self'",
            "img-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )
    headers = {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        # The page's URL may carry the function key (?code=): never send it on, never keep the page in a cache.
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
    return InspectorPage(html.encode("utf-8"), headers)


def _digest(text: str) -> str:
    """The CSP source that allows exactly this inline element's content."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
