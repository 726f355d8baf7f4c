"""Our own replayer for demo.http: VS Code REST Client's file format, as far as demo.http uses it.

It reads file variables, `# @name` requests, their `{{name.response.body.<JSONPath>}}` references and the
`# @expect` lines, and resolves variables in REST Client's order (a response reference before a file variable).
It knows no other client's syntax: tests/e2e/test_demo_http_httpyac.py runs the same file with httpyac.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hosting import Reply, RunningHost

ROOT = Path(__file__).resolve().parents[1]
_VARIABLE = re.compile(r"\{\{\s*([^}]+?)\s*\}\}")
_FILE_VARIABLE = re.compile(r"\s*@([^\s=]+)\s*=\s*(.*?)\s*$")
_COMMENT = re.compile(r"\s*(#|//)")
_METADATA = re.compile(r"\s*(?:#|//)\s*@(name|expect)\s+(.*?)\s*$")
_RESPONSE_REFERENCE = re.compile(r"(\w+)\.response\.body\.(\$.*)")
_JSON_PATH_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")


@dataclass
class DemoRequest:
    """One request of the file: its `###` title, `# @name`, request line, headers, body and `# @expect` line."""

    title: str
    name: str | None
    method: str
    url: str
    headers: dict[str, str]
    body: str
    expect: dict[str, str] = field(default_factory=dict)


def parse_http_file(path: Path) -> tuple[dict[str, str], list[DemoRequest]]:
    """The file variables and the requests of a REST Client file.

    As in REST Client, a file variable may stand anywhere and the last definition wins, and comment lines are
    left out of the request wherever they stand.
    """
    text = path.read_text(encoding="utf-8")
    variables = {match.group(1): match.group(2) for match in map(_FILE_VARIABLE.match, text.splitlines()) if match}
    requests: list[DemoRequest] = []
    for block in re.split(r"^###", text, flags=re.MULTILINE)[1:]:
        title, *lines = block.splitlines()
        metadata: dict[str, str] = {}
        request_lines: list[str] = []
        for line in lines:
            if match := _METADATA.match(line):
                metadata[match.group(1)] = match.group(2)
            elif _COMMENT.match(line) or (not request_lines and (_FILE_VARIABLE.match(line) or not line.strip())):
                continue
            else:
                request_lines.append(line)
        if request_lines:
            requests.append(_parse_request(title.strip(), metadata, request_lines))
    return variables, requests


def _parse_request(title: str, metadata: dict[str, str], lines: list[str]) -> DemoRequest:
    """A request from its lines: the request line, headers up to the first blank line, then the body."""
    method, url = lines[0].split(" ", 1)
    blank = next((index for index, line in enumerate(lines) if not line.strip()), len(lines))
    headers = {name.strip(): value.strip() for name, value in (line.split(":", 1) for line in lines[1:blank])}
    expect = dict(part.split("=", 1) for part in shlex.split(metadata.get("expect", "")))
    body = "\n".join(lines[blank + 1 :]).strip()
    return DemoRequest(title, metadata.get("name"), method, url.strip(), headers, body, expect)


def read_json_path(data: Any, path: str) -> Any:
    """The value at a JSONPath of member (`.name`) and index (`[0]`) steps, such as `$.approvalRequests[0].id`.

    Raises:
        ValueError: the path uses JSONPath syntax beyond those steps.
    """
    steps = path[1:]
    if not path.startswith("$") or "".join(match.group(0) for match in _JSON_PATH_STEP.finditer(steps)) != steps:
        raise ValueError(f"JSONPath {path!r} is not `$` followed by .member and [index] steps.")
    for match in _JSON_PATH_STEP.finditer(steps):
        member, index = match.groups()
        data = data[int(index)] if index is not None else data[member]
    return data


def substitute(text: str, variables: dict[str, str], named: dict[str, Reply]) -> str:
    """`text` with every `{{...}}` resolved: a response reference first, as REST Client does, then a file variable."""

    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if (reference := _RESPONSE_REFERENCE.fullmatch(expression)) and reference.group(1) in named:
            return str(read_json_path(named[reference.group(1)].json(), reference.group(2)))
        return substitute(variables[expression], variables, named)

    return _VARIABLE.sub(value, text)


def replay_demo(running: RunningHost, *, key: str = "local", path: Path = ROOT / "demo.http") -> dict[str, Reply]:
    """Send every request of demo.http (or the .http file at `path`) in order, checking its `# @expect` line;
    returns replies by title."""
    variables, requests = parse_http_file(path)
    variables["key"] = key
    named: dict[str, Reply] = {}
    replies: dict[str, Reply] = {}
    for request in requests:
        url = urlsplit(substitute(request.url, variables, named))
        path = f"{url.path}?{url.query}" if url.query else url.path
        headers = {k: substitute(v, variables, named) for k, v in request.headers.items()}
        body = substitute(request.body, variables, named).encode() or None
        reply = running.request(request.method, path, raw=body, headers=headers)
        assert reply.status == int(request.expect["status"]), (request.title, reply.body)
        if "contains" in request.expect:
            assert request.expect["contains"] in reply.body.decode(), (request.title, reply.body)
        if request.name:
            named[request.name] = reply
        replies[request.title] = reply
    assert len(replies) == len(requests)
    return replies
