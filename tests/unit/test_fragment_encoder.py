"""The fragment encoder: reusing known JSON text never changes what a state encodes to."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_host._conversation.fragment_encoder import _STALE_SLACK, FragmentEncoder
from agent_host._conversation.state import encode_state

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=8,
)
stored_records = st.fixed_dictionaries(
    {"id": st.text(min_size=1), "role": st.sampled_from(["user", "assistant", "tool"]), "at": st.integers()},
    optional={"text": st.text(), "props": st.dictionaries(st.text(), json_values, max_size=3)},
)


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(stored_records, max_size=4),
    added=st.lists(stored_records, max_size=3),
    turns=st.dictionaries(st.text(), st.dictionaries(st.text(), json_values, max_size=3), max_size=3),
    extra=st.dictionaries(st.text(min_size=1).filter(lambda k: k not in {"messages", "turns"}), json_values),
)
def test_encoding_from_known_texts_is_byte_for_byte_encode_state(
    first: list[dict[str, Any]], added: list[dict[str, Any]], turns: dict[str, Any], extra: dict[str, Any]
) -> None:
    encoder = FragmentEncoder()
    state = {"schemaVersion": 1, "messages": first, "turns": turns, **extra}
    grown = {**state, "messages": [*first, *added], "turns": {**turns, "new": {"status": "completed"}}}

    assert encoder.encode(state) == encode_state(state)
    assert encoder.encode(grown) == encode_state(grown)  # reuses the first encoding's texts
    assert encoder.encode(state) == encode_state(state)  # a transcript that is not an extension of the last


def test_a_seeded_transcript_is_written_back_as_it_was_read_and_only_new_records_are_encoded() -> None:
    # Another writer's spelling (escaped non-ASCII, spaces): re-encoding would write "café" instead.
    stored_text = '[{"id": "m1", "role": "user", "text": "caf\\u00e9", "at": 1}]'
    records = json.loads(stored_text)
    new_record = {"id": "m2", "role": "assistant", "text": "Bonjour", "at": 2}
    encoder = FragmentEncoder()
    encoder.seed_transcript(records, stored_text)

    text = encoder.encode({"messages": [*records, new_record]})

    assert (
        text
        == '{"messages":[{"id": "m1", "role": "user", "text": "caf\\u00e9", "at": 1},'
        + json.dumps(new_record, separators=(",", ":"))
        + "]}"
    )
    assert json.loads(text) == {"messages": [*records, new_record]}


def test_a_transcript_that_dropped_its_oldest_records_is_encoded_from_each_record() -> None:
    stored_text = (
        '[{"id": "m1", "role": "user", "text": "a", "at": 1}, {"id": "m2", "role": "user", "text": "b", "at": 2}]'
    )
    records = json.loads(stored_text)
    encoder = FragmentEncoder()
    encoder.seed_transcript(records, stored_text)

    assert encoder.encode({"messages": records[1:]}) == encode_state({"messages": records[1:]})


def test_texts_of_records_no_longer_stored_are_dropped() -> None:
    encoder = FragmentEncoder()
    kept = [{"id": "k", "role": "user", "at": 0}]
    for round_number in range(3):
        gone = [{"id": f"g{round_number}.{n}", "role": "user", "at": n} for n in range(_STALE_SLACK)]
        encoder.encode({"messages": [*kept, *gone]})
    state = {"messages": kept}

    encoder.forget_other_than(state)

    assert len(encoder._texts) == 1
    assert encoder.encode(state) == encode_state(state)
