"""Encoding a conversation's state while reusing the JSON text of what it stored before.

A turn changes a few records of a state that can hold thousands: the transcript usually only grows at its end, and
the hundred kept turn records rarely change. Keeping each record's JSON text (by record identity) and the last
transcript text lets an encoding write only what is new. A process that did not write the state starts from the
transcript text it read (`decode_state_text`), so a cold turn encodes only new records too. What it buys
(`python -m bench --parts`, 200 and 2,000 stored messages, two runs): without the encoder a turn costs 1.1-1.3x,
cold or warm; without the stored transcript text a cold turn costs 1.1-1.2x.

Records are read-only values (see `state_cache`): a changed record is a new object, so its text is encoded anew.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from .state import MESSAGES_KEY, TURNS_KEY

# How many texts of records no longer stored may stay known before they are dropped.
_STALE_SLACK = 256


def _json_encoder() -> Callable[[Any], str]:
    """A fresh encoder producing exactly `json.dumps(value, separators=(",", ":"), ensure_ascii=False)`.

    Made once per state and reused for each of its records, it saves `json.dumps`'s set-up per record.
    """
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    if c_make_encoder is None:  # pragma: no cover - Python builds without the C accelerator
        return encoder.encode
    # The arguments `JSONEncoder.iterencode` passes for these settings (circular check on, NaN allowed).
    chunks = c_make_encoder({}, encoder.default, encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(chunks(value, 0))


class FragmentEncoder:
    """One conversation's known JSON texts, and the encoding of its states from them.

    The result is exactly `encode_state(state)` for records this encoder encoded itself; a transcript seeded from
    stored text is written back as that text (the same values, in the form they were stored in).
    """

    def __init__(self) -> None:
        # id(record) -> (the record, its JSON text), for transcript records and turn records alike.
        self._texts: dict[int, tuple[dict[str, Any], str]] = {}
        # The last transcript list encoded and the JSON of its items (the array without its brackets).
        self._transcript: tuple[list[dict[str, Any]], str] = ([], "")

    def seed_transcript(self, records: list[dict[str, Any]], text: str) -> None:
        """Know `text`, a JSON array whose decoding is `records`, as the transcript's text."""
        self._transcript = (records, text[1:-1])

    def encode(self, state: dict[str, Any]) -> str:
        """The JSON text of `state`, encoding only records whose text is not known yet."""
        to_json = _json_encoder()
        # One join at the end: the state can be a megabyte, and every intermediate string would copy it again.
        parts: list[str] = []
        for name, value in state.items():
            parts += ("," if parts else "{", encode_basestring(name), ":")
            if name == MESSAGES_KEY and isinstance(value, list):
                parts += ("[", self._transcript_items(value, to_json), "]")
            elif name == TURNS_KEY and isinstance(value, dict):
                turns = [encode_basestring(turn) + ":" + self._text(record, to_json) for turn, record in value.items()]
                parts += ("{", ",".join(turns), "}")
            else:
                parts.append(to_json(value))
        parts.append("}" if parts else "{}")
        return "".join(parts)

    def forget_other_than(self, state: dict[str, Any]) -> None:
        """Drop the texts of records `state` no longer holds, once there are enough of them to matter."""
        records = [*(state.get(MESSAGES_KEY) or ()), *(state.get(TURNS_KEY) or {}).values()]
        if len(self._texts) > len(records) + _STALE_SLACK:
            self._texts = {id(record): self._texts[id(record)] for record in records if id(record) in self._texts}

    def _transcript_items(self, records: list[dict[str, Any]], to_json: Callable[[Any], str]) -> str:
        """The comma-separated JSON of `records`, reusing the last transcript text when `records` only extends it."""
        before, items = self._transcript
        if before and len(records) >= len(before) and all(map(operator.is_, before, records)):
            tail = [self._text(record, to_json) for record in records[len(before) :]]
            items = ",".join([items, *tail]) if tail else items
        else:
            items = ",".join([self._text(record, to_json) for record in records])
        self._transcript = (records, items)
        return items

    def _text(self, record: dict[str, Any], to_json: Callable[[Any], str]) -> str:
        known = self._texts.get(id(record))
        if known is None or known[0] is not record:
            known = self._texts[id(record)] = (record, to_json(record))
        return known[1]
