"""Entity batches in the host's JSON format, and a driver that feeds the returned state back like the host does."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_host._conversation.turn_records import answer_messages, turn_text
from agent_host._local_host.scheduler import entity_batch_json, signal_body


def entity_batch(name: str, key: str, state: str | None, operations: Sequence[tuple[str, Any]]) -> str:
    """The JSON the Durable Functions host sends an entity function, each input encoded twice as the host does."""
    return entity_batch_json(name, key, state, [(operation, signal_body(payload)) for operation, payload in operations])


@dataclass
class EntityDriver:
    """Holds one entity's stored state string across batches, as the host would."""

    function: Callable[[str], str]
    name: str
    key: str
    state: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    def send(self, *operations: tuple[str, Any]) -> list[dict[str, Any]]:
        """Run one batch; commit the returned state like the host; return the operation results."""
        output = json.loads(self.function(entity_batch(self.name, self.key, self.state, operations)))
        self.state = output["entityState"] if output["entityExists"] else None
        results = output["results"]
        self.results.extend(results)
        return results

    def run_turn(self, turn_id: str, message: str) -> dict[str, Any]:
        """Run one turn and return its delivery record from the committed state, with the answer's text."""
        (result,) = self.send(("run", {"turnId": turn_id, "message": message}))
        assert not result["isError"], result
        return delivered(self.decoded(), turn_id)

    def decoded(self) -> dict[str, Any]:
        assert self.state is not None
        return json.loads(self.state)


def delivered(state: dict[str, Any], turn_id: str) -> dict[str, Any]:
    """A turn's record as its caller reads it: the answer's messages looked up, and its text."""
    record = state["turns"][turn_id]
    if record["status"] != "completed":
        return record
    messages = answer_messages(state, record)
    return {**record, "messages": messages, "text": turn_text(messages)}
