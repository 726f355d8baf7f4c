"""The orchestrations sample's `.http` file, sent by a real .http client (httpyac) and by our own replayer.

Both run every request of `samples/orchestrations/orchestrations.http` against the sample app on the local host
and check each against its `# @expect` line; the httpyac run changes only the file's @host line.
"""

from __future__ import annotations

from pathlib import Path

from demo_replay import parse_http_file, replay_demo
from hosting import RunningHost
from httpyac_client import httpyac, send_http_file
from sample_host import FUNCTION_KEY, HTTP_FILE, sample_host

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
    assert sample_host.host is not None

    run = send_http_file(httpyac, HTTP_FILE, sample_host.host.base_url, tmp_path / "client")

    assert run.changed == ["@host = http://127.0.0.1:7071"]
    assert len(run.sent) == len(run.requests) == 15
    assert run.problems == []
    assert run.exit_code == 0, run.stderr
    assert f"runs all {len(run.requests)} requests with it" in run.text  # the header's claim
