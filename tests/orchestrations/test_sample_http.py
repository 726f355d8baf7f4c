"""The orchestrations sample's `.http` file, sent by a real .http client (httpyac) and by our own replayer.

Both run every request of `samples/orchestrations/orchestrations.http` against the sample app on the local host
and check each against its `# @expect` line; the httpyac run changes only the file's @host line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from demo_replay import parse_http_file, replay_demo
from hosting import RunningHost
from sample_host import FUNCTION_KEY, HTTP_FILE, ROOT, load_module, sample_host

# The pinned httpyac CLI (installed from .tools/httpyac's lockfile when missing), and the runner and checks that
# demo.http's httpyac test uses: one place says how httpyac is installed, run and judged.
_demo_httpyac = load_module(ROOT / "tests" / "e2e" / "test_demo_http_httpyac.py", "demo_http_httpyac")
httpyac = _demo_httpyac.httpyac
HOST_LINE = re.compile(r"^@host = .*$", re.MULTILINE)

__all__ = ["httpyac", "sample_host"]


def test_our_replayer_sends_every_request_of_the_sample_http_file_and_each_meets_its_expectation(
    sample_host: RunningHost,
) -> None:
    replies = replay_demo(sample_host, key=FUNCTION_KEY, path=HTTP_FILE)

    _, requests = parse_http_file(HTTP_FILE)
    assert len(replies) == len(requests) == 15
    chain = replies[
        "Sequential chaining: the writer drafts, then revises in the same conversation (2 earlier messages: its draft)"
    ].json()
    assert chain["output"]["draft"] == (
        '[offline model] You said: "Write a haiku about rain.". (0 earlier messages in this conversation.)'
    )


def test_httpyac_sends_every_request_of_the_sample_http_file_and_each_meets_its_expectation(
    sample_host: RunningHost, tmp_path: Path, httpyac: list[str]
) -> None:
    text = HTTP_FILE.read_text(encoding="utf-8")
    _, requests = parse_http_file(HTTP_FILE)
    assert sample_host.host is not None
    copy = tmp_path / "client" / HTTP_FILE.name
    copy.parent.mkdir()
    # httpyac lets a file's own @host win over --var, so the copy differs in that one line only.
    copy.write_text(HOST_LINE.sub(f"@host = {sample_host.host.base_url}", text, count=1), encoding="utf-8")

    exit_code, stderr, sent = _demo_httpyac.run_httpyac(httpyac, copy)

    changed = [old for old, new in zip(text.splitlines(), copy.read_text().splitlines(), strict=True) if old != new]
    named: dict[str, Any] = {request.name: item for request, item in zip(requests, sent, strict=True) if request.name}
    problems = [
        problem
        for request, item in zip(requests, sent, strict=True)
        for problem in _demo_httpyac.problems_with(request, item, named)
    ]
    assert changed == ["@host = http://127.0.0.1:7071"]
    assert len(sent) == len(requests) == 15
    assert problems == []
    assert exit_code == 0, stderr
    assert f"runs all {len(requests)} requests with it" in text  # the header's claim
