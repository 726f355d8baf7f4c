"""The worker's data converter: conversation state is stored as our own JSON text, byte for byte.

The SDK serializes entity state through the worker's converter; the default one would encode our JSON text as a
JSON string (every quote escaped), so the stored state would be larger than the budget we check (DTS caps it at
1 MB) and every read would decode it twice. Everything else goes to the converter it wraps.
"""

from __future__ import annotations

from typing import Any

from durabletask.serialization import DataConverter, JsonDataConverter


class StateText(str):
    """Entity state that is already JSON text: the converter stores and reads it unchanged."""


class AgentStateConverter(DataConverter):
    """A `DataConverter` that passes `StateText` through verbatim and hands every other payload to `inner`.

    Args:
        inner: The converter for everything else (orchestration inputs, activity results, other entities' state);
            durabletask's `JsonDataConverter` by default.
    """

    def __init__(self, inner: DataConverter | None = None) -> None:
        self._inner = inner if inner is not None else JsonDataConverter()

    def serialize(self, value: Any) -> str | None:
        """`StateText` as it is; anything else through the inner converter."""
        if isinstance(value, StateText):
            return str(value)
        return self._inner.serialize(value)

    def deserialize(self, data: str | None, target_type: type | None = None) -> Any:
        """The stored text as `StateText` when asked for it; anything else through the inner converter."""
        if target_type is StateText:
            return None if data is None or data == "" else StateText(data)
        return self._inner.deserialize(data, target_type)

    def coerce(self, value: Any, target_type: type | None = None) -> Any:
        """Coerce a decoded value through the inner converter (state text is never decoded)."""
        return self._inner.coerce(value, target_type)

    def can_reconstruct(self, target_type: Any) -> bool:
        """Whether `target_type` can be rebuilt from a payload: `StateText` always, else as the inner converter."""
        return target_type is StateText or self._inner.can_reconstruct(target_type)
