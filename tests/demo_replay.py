"""A replayer for demo.http: the REST Client file format as far as demo.http uses it."""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hosting import Reply, RunningHost

ROOT = Path(__file__).resolve().parents[1]
_VARIABLE = re.compile(r"\{\{\s*([^}]+?)\s*\}\}")


@dataclass
class DemoRequest:
    title: str
    name: str | None
    method: str
    url: str
    headers: dict[str, str]
    body: str
    expect: dict[str, str] = field(default_factory=dict)


def parse_http_file(path: Path) -> tuple[dict[str, str], list[DemoRequest]]:
    """Variables and requests of a REST Client file (only what demo.http uses)."""
    variables: dict[str, str] = {}
    requests: list[DemoRequest] = []
    for block in path.read_text(encoding="utf-8").split("\n###"):
        lines = block.strip("\n").splitlines()
        title = lines[0].strip("# ").strip() if lines else ""
        name, expect, request_line, headers, body_lines = None, {}, None, {}, []
        in_body = False
        for line in lines[1:] if block is not lines else lines:
            if request_line is None:
                if match := re.match(r"@(\w+)\s*=\s*(.*)", line):
                    variables[match.group(1)] = match.group(2).strip()
                elif match := re.match(r"#\s*@name\s+(\w+)", line):
                    name = match.group(1)
                elif match := re.match(r"#\s*@expect\s+(.*)", line):
                    expect = dict(part.split("=", 1) for part in shlex.split(match.group(1)))
                elif re.match(r"(GET|POST|PUT|DELETE|PATCH) ", line):
                    request_line = line
            elif not in_body and line.strip() == "":
                in_body = True
            elif not in_body:
                key, value = line.split(":", 1)
                headers[key.strip()] = value.strip()
            else:
                body_lines.append(line)
        if request_line is not None:
            method, url = request_line.split(" ", 1)
            requests.append(
                DemoRequest(title, name, method, url.strip(), headers, "\n".join(body_lines).strip(), expect)
            )
    return variables, requests


def substitute(text: str, variables: dict[str, str], named: dict[str, Reply]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if ".response.body.$." in expression:
            name, path = expression.split(".response.body.$.")
            data: Any = named[name].json()
            for part in path.split("."):
                data = data[int(part)] if isinstance(data, list) else data[part]
            return str(data)
        return substitute(variables[expression], variables, named)

    return _VARIABLE.sub(value, text)


def replay_demo(running: RunningHost, *, key: str = "local") -> dict[str, Reply]:
    """Send every request of demo.http in order, checking its `# @expect` line; returns replies by title."""
    variables, requests = parse_http_file(ROOT / "demo.http")
    variables["key"] = key
    named: dict[str, Reply] = {}
    replies: dict[str, Reply] = {}
    for request in requests:
        url = urlsplit(substitute(request.url, variables, named))
        path = f"{url.path}?{url.query}" if url.query else url.path
        headers = {k: substitute(v, variables, named) for k, v in request.headers.items()}
        body = substitute(request.body, variables, named).encode() or None
        for _ in range(int(request.expect.get("retry", "1"))):
            reply = running.request(request.method, path, raw=body, headers=headers)
            if reply.status == int(request.expect.get("status", "200")):
                break
            time.sleep(0.1)
        assert reply.status == int(request.expect["status"]), (request.title, reply.body)
        if "contains" in request.expect:
            assert request.expect["contains"] in reply.body.decode(), (request.title, reply.body)
        if request.name:
            named[request.name] = reply
        replies[request.title] = reply
    assert len(replies) == len(requests)
    return replies
