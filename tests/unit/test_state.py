"""The state schema: the checked-in JSON Schema matches the model, and unknown versions are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host import StateCorruptError, StateVersionError
from agent_host._state import (
    SCHEMA_VERSION,
    RetentionSettings,
    decode_state,
    encode_state,
    new_state,
    state_json_schema,
)

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "data" / "conversation_state.schema.json"


def test_checked_in_schema_matches_the_model() -> None:
    # Regenerate: python -c "import json, agent_host._state as s; print(json.dumps(s.state_json_schema(), indent=2))"
    assert json.loads(SCHEMA_FILE.read_text()) == state_json_schema()


def test_new_state_round_trips() -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1_700_000_000_000)

    assert decode_state(encode_state(state)) == state
    assert state["schemaVersion"] == SCHEMA_VERSION


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_other_schema_versions_are_refused(version: object) -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["schemaVersion"] = version

    with pytest.raises(StateVersionError, match="nothing was changed"):
        decode_state(json.dumps(state))


def test_state_that_breaks_the_schema_names_the_field() -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["messages"] = [{"id": "m1", "role": "user", "text": "hi"}]  # no "at"

    with pytest.raises(StateCorruptError, match=r"messages\.0\.at"):
        decode_state(json.dumps(state))
