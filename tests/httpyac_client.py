"""A real .http client for the tests: the pinned httpyac CLI, run on a copy of a .http file against a local host.

demo.http and the samples' .http files are each sent by httpyac and every request judged against its `# @expect`
line. How httpyac is installed, run and judged is written here once so those tests cannot drift apart.

The client is pinned, with its whole dependency tree, in .tools/httpyac (package.json and package-lock.json); the
`httpyac` fixture installs it there with `npm ci` when it is missing (tests/npm_tools.py), and skips only where node
or npm is missing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from demo_replay import ROOT, DemoRequest, parse_http_file, read_json_path
from npm_tools import node, require_tree

TOOL_DIR = ROOT / ".tools" / "httpyac"
HOST_LINE = re.compile(r"^@host = .*$", re.MULTILINE)
RESPONSE_REFERENCE = re.compile(r"\{\{(\w+)\.response\.body\.(\$[^}]*)\}\}")


@pytest.fixture(scope="module")
def httpyac() -> list[str]:
    """The command that runs the pinned httpyac, installed from .tools/httpyac's lockfile when it is not there."""
    modules = require_tree(TOOL_DIR, "send the .http files with httpyac")
    return [node(), str(modules / "httpyac" / "bin" / "httpyac.js")]


def run_httpyac(httpyac: list[str], demo: Path) -> tuple[int, str, list[dict[str, Any]]]:
    """httpyac's exit code, its stderr, and every request it processed, in order (`send --all --json`)."""
    # httpyac honours proxy settings from the environment; the local host must be reached directly.
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    command = [*httpyac, "send", demo.name, "--all", "--json"]
    output = demo.with_suffix(".json")
    # A file, not a pipe: node exits before a pipe has taken more than the first 64 KiB of the report.
    with output.open("w", encoding="utf-8") as stdout:
        done = subprocess.run(
            command, cwd=demo.parent, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300
        )
    report = output.read_text(encoding="utf-8")
    assert report.startswith("{"), f"httpyac exited {done.returncode} without a report:\n{report}\n{done.stderr}"
    return done.returncode, done.stderr, json.loads(report)["requests"]


def problems_with(request: DemoRequest, sent: dict[str, Any], named: dict[str, Any]) -> list[str]:
    """What is wrong with what httpyac sent for `request` and what came back, against its `# @expect` line."""
    response = sent.get("response")
    if response is None:
        errors = [result.get("message") for result in sent.get("testResults") or []]
        return [f"{request.title!r}: not sent: {errors}"]
    exchange = response["request"]
    body = exchange.get("body") if isinstance(exchange.get("body"), str) else ""
    found = []
    if exchange["method"] != request.method:
        found.append(f"{request.title!r}: sent as {exchange['method']}, the file says {request.method}")
    if "{{" in exchange["url"] + body:
        found.append(f"{request.title!r}: a variable was left unresolved: {exchange['url']} {body}")
    for name, path in RESPONSE_REFERENCE.findall(request.url + request.body):
        value = str(read_json_path(json.loads(named[name]["response"]["body"]), path))
        if value not in exchange["url"] + body:
            found.append(f"{request.title!r}: {name}'s {path} ({value}) is not in what was sent")
    if response["statusCode"] != int(request.expect["status"]):
        found.append(f"{request.title!r}: status {response['statusCode']}, expected {request.expect['status']}")
    if request.expect.get("contains", "") not in (response.get("body") or ""):
        found.append(f"{request.title!r}: the body lacks {request.expect['contains']!r}: {response.get('body')}")
    return found


@dataclass
class HttpyacRun:
    """One httpyac run of a .http file: what the file asks for, what httpyac sent, and what was wrong with it."""

    text: str
    requests: list[DemoRequest]
    changed: list[str]  # the file's lines the copy changed (only its @host line, if all is well)
    sent: list[dict[str, Any]]
    problems: list[str]
    exit_code: int
    stderr: str


def send_http_file(httpyac: list[str], http_file: Path, base_url: str, client_dir: Path) -> HttpyacRun:
    """Send every request of `http_file` with httpyac to `base_url`, from a copy in `client_dir`, and judge each.

    httpyac lets a file's own @host win over --var, so the copy differs from the file in its @host line only.
    """
    text = http_file.read_text(encoding="utf-8")
    _, requests = parse_http_file(http_file)
    copy = client_dir / http_file.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(HOST_LINE.sub(f"@host = {base_url}", text, count=1), encoding="utf-8")
    exit_code, stderr, sent = run_httpyac(httpyac, copy)
    lines = zip(text.splitlines(), copy.read_text(encoding="utf-8").splitlines(), strict=True)
    changed = [old for old, new in lines if old != new]
    if len(sent) != len(requests):
        titles = [item.get("title") or item.get("name") for item in sent]
        problems = [f"httpyac processed {len(sent)} requests, the file has {len(requests)}: {titles}"]
    else:
        named = {request.name: item for request, item in zip(requests, sent, strict=True) if request.name}
        problems = [problem for pair in zip(requests, sent, strict=True) for problem in problems_with(*pair, named)]
    return HttpyacRun(text, requests, changed, sent, problems, exit_code, stderr)
