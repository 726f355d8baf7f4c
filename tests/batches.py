"""Entity batches in the Durable Functions host's JSON format, and a driver that feeds the returned state back.

The format is written here from the protocol, never taken from the local host, so that tests driving an entity
function with it check the entity against what the real host sends, not against the local host's reading of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_host._conversation.turn_receipts import answer_messages, turn_text


def signal_input(payload: Any) -> str | None:
    """An operation's input as the host delivers a client's signal: the JSON text of the JSON text of `payload`.

    `DurableOrchestrationClient.signal_entity` posts `json.dumps(payload)` (None for a falsy payload) through aiohttp's
    `json=`, which encodes it again; the extension hands the request body on as the operation's input, and the
    entity's `get_input` decodes it twice (`json.loads`, then `df_loads`).
    """
    return json.dumps(json.dumps(payload)) if payload else None


def entity_batch(name: str, key: str, state: str | None, operations: Sequence[tuple[str, Any]]) -> str:
    """The JSON the host sends an entity function for signalled operations, as the SDK's entity trigger reads it.

    The extension's entity trigger binding writes the entity's identity (`self`), whether it exists, its stored state
    text and the batch, each operation as `name`, `input` and `isSignal`; `DurableEntityContext.from_json` and
    `Entity.handle` read exactly these keys.

    Args:
        name: The entity name, lower-case as the host keeps it.
        key: The entity key.
        state: The stored state text, or None when the entity does not exist.
        operations: (operation name, payload) pairs in delivery order, each payload sent as a client signal.
    """
    batch = [{"name": operation, "input": signal_input(payload), "isSignal": True} for operation, payload in operations]
    return json.dumps({"self": {"name": name, "key": key}, "exists": state is not None, "state": state, "batch": batch})


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
