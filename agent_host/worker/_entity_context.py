"""A durabletask entity operation seen as the Durable Functions entity context our conversation entity reads.

The conversation entity (agent_host/_conversation/entity.py) is host-neutral: it asks its context for the
operation, the entity's name and key, the input and the stored text, and hands back the new text and a result.
"""

from __future__ import annotations

from typing import Any

from durabletask.entities import EntityContext

from ._state_converter import StateText


class EntityOperationContext:
    """One operation of a durabletask entity batch, in the shape of `df.DurableEntityContext`.

    Args:
        context: The SDK's context of the operation.
        operation_input: The operation's input as the SDK decoded it (a JSON object here).
    """

    def __init__(self, context: EntityContext, operation_input: Any) -> None:
        self._context = context
        self._input = operation_input
        self._result: Any = None
        self._destruct = False

    @property
    def operation_name(self) -> str:
        """The operation to run (`run`, `delete`, ...)."""
        return self._context.operation

    @property
    def entity_name(self) -> str:
        """The entity's name (`conversation_<agent>`, lower-cased by the SDK as by the Functions host)."""
        return self._context.entity_id.entity

    @property
    def entity_key(self) -> str:
        """The entity's key: the conversation id."""
        return self._context.entity_id.key

    def get_input(self) -> Any:
        """The operation's input."""
        return self._input

    def get_state(self) -> str | None:
        """The stored state text exactly as stored, or None when the entity has none."""
        state = self._context.get_state(StateText)
        return None if state is None else str(state)

    def set_state(self, text: str) -> None:
        """Store `text` (our JSON encoding) as the entity's state, unchanged."""
        self._context.set_state(StateText(text))

    def set_result(self, result: Any) -> None:
        """The operation's result, returned to a caller that awaited it (`call_entity`)."""
        self._result = result

    def destruct_on_exit(self) -> None:
        """Leave no state behind when the operation ends (the entity then does not exist)."""
        self._destruct = True

    def finish(self) -> Any:
        """End the operation: drop the state if asked to, and give the result to return to the SDK."""
        if self._destruct:
            self._context.set_state(None)
        return self._result
