"""The state schema: the checked-in JSON Schema matches the model, and unknown versions are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agent_host import StateCorruptError, StateVersionError
from agent_host._conversation.state import (
    SCHEMA_VERSION,
    ConversationState,
    RetentionSettings,
    decode_state,
    decode_state_text,
    delete_found_nothing,
    encode_state,
    has_applied_delete,
    new_state,
    parse_with_spans,
    state_json_schema,
)

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "data" / "conversation_state.schema.json"


def test_checked_in_schema_matches_the_model() -> None:
    # Regenerate: python -c "import json, agent_host._conversation.state as s;
    #   print(json.dumps(s.state_json_schema(), indent=2))"
    assert json.loads(SCHEMA_FILE.read_text()) == state_json_schema()


def test_new_state_round_trips() -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1_700_000_000_000)

    assert decode_state(encode_state(state)) == state
    assert state["schemaVersion"] == SCHEMA_VERSION


@pytest.mark.parametrize("version", [None, 0, SCHEMA_VERSION + 1, "1", "2", True, 2.0])
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


@pytest.mark.parametrize(
    ("field", "value"),
    [("at", "soon"), ("at", None), ("at", 2.5), ("id", 7), ("role", None), ("text", ["hi"]), ("text", 3)],
)
def test_a_plain_text_record_with_one_mistyped_field_is_refused_naming_it(field: str, value: object) -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    plain = {"id": "m1", "role": "user", "text": "hi", "at": 2}
    state["messages"] = [plain, {**plain, "id": "m2", field: value}]

    with pytest.raises(StateCorruptError, match=rf"'messages\.1\.{field}"):
        decode_state(json.dumps(state))


def test_a_receipt_may_name_any_transcript_message_and_one_naming_a_missing_message_is_refused() -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["messages"] = [{"id": f"m{n}", "role": "user", "text": "hi", "at": n} for n in range(50)]
    # The oldest and the newest message named: the check must not stop at the recent end of the transcript.
    state["turns"] = {
        "t1": {"status": "completed", "messages": ["m0"], "at": 1},
        "t2": {"status": "completed", "messages": ["m49", "m25"], "at": 2},
    }
    assert decode_state(json.dumps(state))["turns"] == state["turns"]

    state["turns"]["t3"] = {"status": "completed", "messages": ["m10", "gone"], "at": 3}
    with pytest.raises(StateCorruptError, match=r"'turns\.t3\.messages': it names message 'gone', which"):
        decode_state(json.dumps(state))


_field_values = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3)
_message_like = st.dictionaries(
    st.sampled_from(["id", "role", "text", "contents", "props", "author", "at", "extra"]),
    _field_values
    | st.lists(st.dictionaries(st.text(max_size=2), _field_values, max_size=2) | _field_values)
    | st.dictionaries(st.text(max_size=2), _field_values, max_size=2),
)


_nearly_valid = st.fixed_dictionaries(
    {"id": st.text(max_size=3), "role": st.text(max_size=3), "at": st.integers()},
    optional={name: _field_values for name in ("text", "author", "props", "extra")}
    | {"contents": st.lists(st.dictionaries(st.text(max_size=2), _field_values) | _field_values, max_size=2)},
)


@settings(max_examples=200, deadline=None)
@given(messages=st.lists(_message_like | _nearly_valid, max_size=3))
def test_the_quick_message_check_accepts_and_refuses_exactly_what_the_schema_does(messages: list) -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["messages"] = messages
    try:
        ConversationState.model_validate(state)
        schema_accepts = True
    except ValidationError:
        schema_accepts = False

    try:
        decode_state(json.dumps(state))
        decoded = True
    except StateCorruptError:
        decoded = False

    assert decoded == schema_accepts


_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4)
_json_values = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(
    members=st.dictionaries(st.text(max_size=4), _json_values, max_size=4),
    spacing=st.lists(st.sampled_from(["", " ", "\n", "\t ", "\r\n"]), min_size=8, max_size=8),
    ascii_only=st.booleans(),
)
def test_parsing_with_spans_finds_each_member_text_in_any_valid_spelling(
    members: dict, spacing: list[str], ascii_only: bool
) -> None:
    before, after_brace, before_colon, after_colon, before_comma, after_comma, before_end, trailing = spacing
    spelled = {
        json.dumps(key, ensure_ascii=ascii_only): json.dumps(value, ensure_ascii=ascii_only)
        for key, value in members.items()
    }
    items = (f"{key}{before_colon}:{after_colon}{value}" for key, value in spelled.items())
    raw = f"{before}{{{after_brace}{f'{before_comma},{after_comma}'.join(items)}{before_end}}}{trailing}"

    data, spans = parse_with_spans(raw)

    assert data == json.loads(raw)
    assert {key: json.loads(raw[start:end]) for key, (start, end) in spans.items()} == members


@settings(max_examples=300, deadline=None)
@given(raw=st.text(alphabet='{}[]":,. \n0123456789abetruflsn\\', max_size=16))
def test_parsing_with_spans_refuses_exactly_what_json_refuses(raw: str) -> None:
    try:
        expected = json.loads(raw)
    except ValueError:
        expected = ValueError

    try:
        parsed = parse_with_spans(raw)[0]
    except ValueError:
        parsed = ValueError

    assert parsed == expected


def test_decoding_gives_the_stored_text_of_the_transcript_unless_an_upgrade_rebuilt_it() -> None:
    state = new_state("assistant", "c1", RetentionSettings(), 1)
    state["messages"] = [{"id": "m1", "role": "user", "text": "caf\u00e9", "at": 2}]
    # Another writer's spelling: escaped non-ASCII and spaces; the text comes back as written.
    raw = json.dumps(state, ensure_ascii=True, indent=1)

    decoded, transcript = decode_state_text(raw)

    assert transcript is not None and "caf\\u00e9" in transcript
    assert json.loads(transcript) == decoded["messages"] == state["messages"]
    version_1 = {**state, "schemaVersion": 1, "messages": [{"id": "m1", "role": "assistant", "text": "x", "at": 2}]}
    upgraded, no_text = decode_state_text(json.dumps(version_1))
    assert upgraded["messages"] == [{"id": "m1", "role": "assistant", "text": "x", "author": None, "at": 2}]
    assert no_text is None


def test_decoding_text_refuses_invalid_json_as_corrupt_state() -> None:
    with pytest.raises(StateCorruptError, match=r"is not valid JSON \(Extra data"):
        decode_state_text('{"schemaVersion": 3} {')


def tombstone(existed: bool, deletes: list[str]) -> dict:
    fresh = new_state("assistant", "c1", RetentionSettings(), 1)
    return {**fresh, "deleted": {"at": 2, "existed": existed, "turns": []}, "appliedDeletes": deletes}


@pytest.mark.parametrize(
    ("state", "found_nothing"),
    [
        (tombstone(existed=True, deletes=["d1"]), False),
        (tombstone(existed=False, deletes=["d1"]), True),  # another delete removed the conversation first
        (tombstone(existed=False, deletes=["d1", "d2"]), False),  # d2 found d1's tombstone; d1 deleted it
        ({**new_state("assistant", "c1", RetentionSettings(), 3), "appliedDeletes": ["d1"]}, False),
    ],
    ids=["its-tombstone", "found-a-tombstone", "a-later-delete", "a-later-conversation"],
)
def test_a_delete_that_ran_found_nothing_only_when_its_own_tombstone_says_so(state: dict, found_nothing: bool) -> None:
    assert has_applied_delete(state, "d1")
    assert delete_found_nothing(state, "d1") is found_nothing


def test_deletes_acknowledged_in_applied_changes_before_applied_deletes_count_as_applied() -> None:
    legacy = {**new_state("assistant", "c1", RetentionSettings(), 3), "appliedChanges": ["r1", "d1"]}

    assert has_applied_delete(legacy, "d1") and not has_applied_delete(legacy, "d2")
    assert decode_state(encode_state(tombstone(existed=True, deletes=["d1"])))["appliedDeletes"] == ["d1"]
