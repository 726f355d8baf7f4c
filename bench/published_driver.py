"""Drives the published host's `dafx-{name}` entity through the host's JSON batch format; prints figures as JSON.

Runs with the python of the separate virtual environment that holds `agent-framework-azurefunctions`
(see `bench/published.py`), never with the project's: it imports neither `agent_host` nor the project's tests.
Usage: `python published_driver.py '{"sizes": [20, 200, 2000], "repeats": 7}'`.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_framework import Agent
from agent_framework_azurefunctions import AgentFunctionApp

from bench.workload import (
    AGENT_INSTRUCTIONS,
    AGENT_NAME,
    ZeroLatencyChatClient,
    entity_batch,
    interleaved_medians,
    user_message,
)

ENTITY_NAME = f"dafx-{AGENT_NAME}"
KEY = "bench-conversation"


def run_request(turn: int) -> dict[str, Any]:
    """The entity input the published host's HTTP route signals for one message (its `RunRequest.to_dict()`)."""
    return {
        "message": user_message(turn),
        "enable_tool_calls": True,
        "wait_for_response": True,
        "role": "user",
        "request_response_format": "text",
        "correlationId": f"corr-{turn:06d}",
        "options": {},
        "created_at": datetime.now(UTC).isoformat(),
    }


def stored_messages(state: str) -> int:
    """How many messages the published state holds (requests and responses each hold their messages)."""
    history = json.loads(state)["data"]["conversationHistory"]
    return sum(len(entry.get("messages", [])) for entry in history)


def checked(output: str) -> str:
    """The new state of one batch; fail loudly when the published entity reported an error in its result."""
    decoded = json.loads(output)
    for result in decoded["results"]:
        payload = json.loads(result["result"]) if isinstance(result["result"], str) else result["result"]
        if result["isError"] or (isinstance(payload, dict) and payload.get("status") == "error"):
            raise RuntimeError(f"The published entity failed an operation: {payload}")
    return decoded["entityState"]


def measure(sizes: list[int], repeats: int) -> dict[str, Any]:
    """Grow one conversation to each size in `sizes` (stored messages) and time one more turn from each."""
    app = AgentFunctionApp(
        agents=[Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)],
        enable_health_check=False,
        enable_http_endpoints=False,
    )
    function = next(f for f in app.get_functions() if f.get_function_name() == ENTITY_NAME).get_user_function()
    state: str | None = None
    turn = 0
    figures: list[dict[str, Any]] = []
    grow_started = time.perf_counter()
    for size in sorted(sizes):
        while state is None or stored_messages(state) < size:
            turn += 1
            state = checked(function(entity_batch(ENTITY_NAME, KEY, state, [("run", run_request(turn))])))
        snapshot = state
        batch = entity_batch(ENTITY_NAME, KEY, snapshot, [("run", run_request(turn + 1))])
        after = checked(function(batch))
        if stored_messages(after) != stored_messages(snapshot) + 2:
            raise RuntimeError("The published entity did not store the timed turn's two messages.")
        medians = interleaved_medians(
            {
                "turn": (lambda batch=batch: function(batch), None),
                "floor": (lambda snapshot=snapshot: json.dumps(json.loads(snapshot)), None),
            },
            repeats,
        )
        figures.append(
            {
                "messages": stored_messages(snapshot),
                "state_bytes": len(snapshot.encode("utf-8")),
                "turn_ms": medians["turn"],
                "floor_ms": medians["floor"],
            }
        )
    return {
        "version": metadata.version("agent-framework-azurefunctions"),
        "core_version": metadata.version("agent-framework-core"),
        "grow_seconds": time.perf_counter() - grow_started,
        "sizes": figures,
    }


def main() -> None:
    """Read the request from the first argument, print the figures as one JSON document."""
    request = json.loads(sys.argv[1])
    print(json.dumps(measure(list(request["sizes"]), int(request["repeats"]))))


if __name__ == "__main__":
    main()
