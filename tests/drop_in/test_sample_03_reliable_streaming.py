"""Sample 03 (reliable streaming) of agent-framework-azurefunctions, as our own app (`drop_in_agents.streaming_app`).

Its default callback reads `context.thread_id` and appends each update to a real Redis stream; a route of the app
reads the stream back as Server-Sent Events or as text, from a cursor. The streamed text must be the turn's answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from drop_in_agents import END_OF_STREAM, REDIS_URL_SETTING, streaming_app
from drop_in_hosts import path_of, poll, run_agent, serving
from hosting import RunningHost
from streaming_stores.backing_services import ServiceUnavailableError, running_redis


@pytest.fixture(scope="module")
def streaming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHost]:
    try:
        with running_redis() as url:
            patch = pytest.MonkeyPatch()
            patch.setenv(REDIS_URL_SETTING, url)
            try:
                with serving(streaming_app, tmp_path_factory.mktemp("03")) as running:
                    yield running
            finally:
                patch.undo()
    except ServiceUnavailableError as exc:
        pytest.skip(str(exc))


def sse_events(body: str) -> list[tuple[str, str, str]]:
    """(id, event, data) of each event of a Server-Sent Events body."""
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["id"], fields["event"], fields["data"]))
    return events


def test_03_the_callback_streams_the_answer_to_redis_and_the_route_reads_it_back(streaming: RunningHost) -> None:
    started = streaming.request(
        "POST",
        "/api/agents/TravelPlanner/run?wait_for_response=false",
        headers={"Content-Type": "text/plain", "Accept": "application/json"},
        raw=b"Plan a weekend in Lisbon.",
    )
    session_id = started.json()["session_id"]
    turn = poll(streaming, path_of(started.headers["location"]), lambda reply: reply.status == 200)
    streamed = poll(streaming, f"/api/agent/stream/{session_id}", lambda reply: END_OF_STREAM in reply.body.decode())
    text = streaming.request("GET", f"/api/agent/stream/{session_id}", headers={"Accept": "text/plain"})

    events = sse_events(streamed.body.decode())
    assert started.status == 202 and started.json()["status"] == "accepted"
    assert streamed.status == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    assert streamed.headers["x-conversation-id"] == session_id
    assert "".join(json.loads(data) for _, event, data in events if event == "message") == turn.json()["text"]
    assert events[-1][1:] == ("done", END_OF_STREAM) and len(events) > 3
    assert text.body.decode() == turn.json()["text"]


def test_03_a_cursor_resumes_the_stream_after_the_entry_it_names(streaming: RunningHost) -> None:
    reply = run_agent(streaming, "TravelPlanner", {"message": "Plan a day in Porto.", "session_id": "porto-1"})
    first = sse_events(streaming.request("GET", "/api/agent/stream/porto-1").body.decode())

    after = sse_events(streaming.request("GET", f"/api/agent/stream/porto-1?cursor={first[1][0]}").body.decode())

    assert reply.status == 200
    assert after == first[2:]
