"""Drives the published host's `dafx-{name}` entity through the host's JSON batch format, on request.

Runs with the python of the separate virtual environment that holds `agent-framework-azurefunctions`
(see `bench/published.py`), never with the project's: it imports neither `agent_host` nor the project's tests.
It reads one JSON request per line on stdin and answers each with one JSON line on stdout, so the benchmark can
time its turns round by round with agent-host's (interleaved, under the same machine conditions):

- first, unasked: `{"version": ..., "core_version": ...}`
- `{"op": "grow", "messages": N}`: grow the conversation to at least N stored messages and keep it as the
  snapshot to time from → `{"messages": ..., "state_bytes": ...}`
- `{"op": "turn"}`: the CPU time of one more turn from the snapshot → `{"ms": ...}`
- `{"op": "floor"}`: the CPU time of `json.loads` + `json.dumps` of the snapshot → `{"ms": ...}`
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_framework import Agent
from agent_framework_azurefunctions import AgentFunctionApp

from bench.workload import AGENT_INSTRUCTIONS, AGENT_NAME, ZeroLatencyChatClient, cpu_ms, entity_batch, user_message

PACKAGE = "agent-framework-azurefunctions"
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


class Driver:
    """The published host's app, its entity function, and one conversation grown on request."""

    def __init__(self) -> None:
        app = AgentFunctionApp(
            agents=[Agent(ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME)],
            enable_health_check=False,
            enable_http_endpoints=False,
        )
        self.function = next(f for f in app.get_functions() if f.get_function_name() == ENTITY_NAME).get_user_function()
        self.state: str | None = None
        self.turn = 0
        self.batch = ""

    def grow(self, messages: int) -> dict[str, Any]:
        """Grow the conversation to at least `messages` stored messages; the next timed turn starts there."""
        while self.state is None or stored_messages(self.state) < messages:
            self.turn += 1
            self.state = checked(
                self.function(entity_batch(ENTITY_NAME, KEY, self.state, [("run", run_request(self.turn))]))
            )
        self.batch = entity_batch(ENTITY_NAME, KEY, self.state, [("run", run_request(self.turn + 1))])
        if stored_messages(checked(self.function(self.batch))) != stored_messages(self.state) + 2:
            raise RuntimeError("The published entity did not store the timed turn's two messages.")
        return {"messages": stored_messages(self.state), "state_bytes": len(self.state.encode("utf-8"))}

    def time_turn(self) -> dict[str, float]:
        return {"ms": cpu_ms(lambda: self.function(self.batch))}

    def time_floor(self) -> dict[str, float]:
        state = self.state or "null"
        return {"ms": cpu_ms(lambda: json.dumps(json.loads(state)))}


def main() -> None:
    """Say which versions run, then answer requests from stdin until it closes."""
    driver = Driver()
    hello = {"version": metadata.version(PACKAGE), "core_version": metadata.version("agent-framework-core")}
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "grow":
            answer: dict[str, Any] = driver.grow(int(request["messages"]))
        elif request["op"] == "turn":
            answer = driver.time_turn()
        elif request["op"] == "floor":
            answer = driver.time_floor()
        else:
            raise ValueError(f"Unknown request {request!r}")
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
