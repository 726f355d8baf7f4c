"""Functions route templates: parsing a template such as ``agents/{agent}/turns/{turnId}`` and matching paths.

Knows nothing about functions, keys or the server; it only turns templates and raw paths into segments and parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(\?)?\}")


@dataclass(frozen=True)
class _Segment:
    """One ``/``-separated piece of a route template: a literal (lower-cased) or a parameter's name."""

    text: str
    is_parameter: bool
    optional: bool = False


class RouteTemplate:
    """A Functions route template made of literal segments, ``{name}`` parameters and trailing optional ``{name?}``
    parameters, e.g. ``agents/{agent}/run`` or ``files/{name?}``.

    An optional parameter may be left out of the path, with every segment after it, and is then absent from the route
    parameters, as the Functions host (ASP.NET Core routing) matches it. Defaults, constraints, catch-alls, optional
    parameters followed by required segments and segments mixing text and parameters are refused when the template is
    parsed, so the local host never matches a path differently from the Functions host.
    """

    def __init__(self, template: str) -> None:
        """Parse a template.

        Args:
            template: The route as given to ``@app.route``; leading and trailing slashes are ignored.

        Raises:
            ValueError: If a segment is neither a literal nor a plain ``{name}`` parameter.
        """
        self.template = template.strip("/")
        self.segments: list[_Segment] = (
            [_parse_segment(self.template, s) for s in self.template.split("/")] if self.template else []
        )
        self._required = sum(not segment.optional for segment in self.segments)
        if any(segment.optional for segment in self.segments[: self._required]):
            raise ValueError(
                f"Route template {template!r}: an optional parameter may only be followed by optional parameters; "
                "the local host does not match segments after a left-out one. Make the later segments optional, or "
                "run this app with Azure Functions Core Tools (func start)."
            )
        # Literal segments are more specific than parameters, position by position (lower sorts first).
        self.rank: tuple[int, ...] = tuple(int(s.is_parameter) for s in self.segments)

    def match(self, path: list[str]) -> dict[str, str] | None:
        """Match decoded path segments.

        Args:
            path: Percent-decoded segments after the route prefix.

        Returns:
            The route parameters, or None when the path does not match.
        """
        if not self._required <= len(path) <= len(self.segments):
            return None
        params: dict[str, str] = {}
        for segment, value in zip(self.segments, path, strict=False):
            if not segment.is_parameter:
                if value.lower() != segment.text:
                    return None
            elif not value:
                return None
            else:
                params[segment.text] = value
        return params


def _parse_segment(template: str, raw: str) -> _Segment:
    """Parse one template segment.

    Args:
        template: The whole template, for the error message.
        raw: The segment text.

    Returns:
        The parsed segment.

    Raises:
        ValueError: If the segment holds braces but is not exactly ``{name}`` or ``{name?}``.
    """
    if "{" not in raw and "}" not in raw:
        return _Segment(raw.lower(), is_parameter=False)
    parameter = _PARAMETER.fullmatch(raw)
    if parameter is None:
        raise ValueError(
            f"Route template {template!r}: the local host does not support the segment {raw!r}. It serves literal "
            "segments, plain {name} parameters and trailing optional {name?} parameters, not defaults, constraints, "
            "catch-alls or segments mixing text and parameters; run this app with Azure Functions Core Tools "
            "(func start) instead."
        )
    return _Segment(parameter.group(1), is_parameter=True, optional=bool(parameter.group(2)))


def split_path(raw_path: str) -> list[str]:
    """Split a raw URL path into percent-decoded segments, ignoring one trailing slash.

    Args:
        raw_path: The path as sent, still percent-encoded.

    Returns:
        The decoded segments (``/`` gives ``[]``).
    """
    parts = raw_path.lstrip("/").split("/")
    if parts and parts[-1] == "":
        parts.pop()
    return [unquote(p) for p in parts]
