"""Functions route templates: parsing a template such as ``agents/{agent}/turns/{turnId}`` and matching paths.

Knows nothing about functions, keys or the server; it only turns templates and raw paths into segments and parameters.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from urllib.parse import unquote


class _SegmentKind(enum.IntEnum):
    """Kinds of route template segments; the value is the specificity rank (lower wins)."""

    LITERAL = 0
    PARAMETER = 1
    OPTIONAL = 2
    CATCH_ALL = 3


@dataclass(frozen=True)
class _Segment:
    """One ``/``-separated piece of a route template."""

    kind: _SegmentKind
    text: str
    default: str | None = None


class RouteTemplate:
    """A Functions route template such as ``agents/{agent}/turns/{turnId?}``.

    Supported: literal segments (case-insensitive), ``{name}``, optional ``{name?}``, defaults ``{name=value}``,
    constraints ``{name:alpha}`` (the constraint is ignored) and a trailing catch-all ``{*name}``.
    """

    def __init__(self, template: str) -> None:
        """Parse a template.

        Args:
            template: The route as given to ``@app.route``; leading and trailing slashes are ignored.
        """
        self.template = template.strip("/")
        self.segments: list[_Segment] = [_parse_segment(s) for s in self.template.split("/")] if self.template else []
        self.rank: tuple[int, ...] = tuple(int(s.kind) for s in self.segments)

    def match(self, path: list[str]) -> dict[str, str] | None:
        """Match decoded path segments.

        Args:
            path: Percent-decoded segments after the route prefix.

        Returns:
            The route parameters, or None when the path does not match.
        """
        params: dict[str, str] = {}
        for index, segment in enumerate(self.segments):
            if segment.kind is _SegmentKind.CATCH_ALL:
                rest = "/".join(path[index:])
                if rest:
                    params[segment.text] = rest
                return params
            if index >= len(path):
                for missing in self.segments[index:]:
                    if missing.kind is _SegmentKind.LITERAL or missing.kind is _SegmentKind.PARAMETER:
                        return None
                    if missing.default is not None:
                        params[missing.text] = missing.default
                return params
            value = path[index]
            if segment.kind is _SegmentKind.LITERAL:
                if value.lower() != segment.text:
                    return None
            elif not value:
                return None
            else:
                params[segment.text] = value
        return params if len(path) <= len(self.segments) else None


def _parse_segment(raw: str) -> _Segment:
    """Parse one template segment.

    Args:
        raw: The segment text.

    Returns:
        The parsed segment; anything not wrapped in braces is a literal.
    """
    if not (raw.startswith("{") and raw.endswith("}")):
        return _Segment(_SegmentKind.LITERAL, raw.lower())
    inner = raw[1:-1]
    catch_all = inner.startswith("*")
    inner = inner.lstrip("*")
    optional = inner.endswith("?")
    inner = inner.rstrip("?")
    default: str | None = None
    if "=" in inner:
        inner, default = inner.split("=", 1)
        optional = True
    name = inner.split(":", 1)[0]
    if catch_all:
        return _Segment(_SegmentKind.CATCH_ALL, name)
    return _Segment(_SegmentKind.OPTIONAL if optional else _SegmentKind.PARAMETER, name, default)


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
