"""The Azure Table layout of a stream, without a service: keys, the rows of one event, transactions, reassembly."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_host._streaming import table_rows
from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent

FORBIDDEN_IN_KEYS = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")


def test_a_stream_key_becomes_a_partition_key_without_the_characters_tables_forbid() -> None:
    key = table_rows.partition_key("assistant/c-1.x_y/t#1?\\\t\x7f\x9f~%é")

    assert key == "assistant~2Fc-1.x_y~2Ft~231~3F~5C~09~7F~9F~7E~25é"
    assert FORBIDDEN_IN_KEYS.search(key) is None


@given(st.text())
def test_partition_keys_are_one_to_one_and_reversible(stream: str) -> None:
    key = table_rows.partition_key(stream[:300])

    assert FORBIDDEN_IN_KEYS.search(key) is None
    assert table_rows.stream_of(key) == stream[:300]


def test_a_stream_key_over_one_kib_as_a_table_key_is_refused() -> None:
    assert len(table_rows.partition_key("a" * 512)) == 512  # 1,024 bytes in UTF-16: the most a key may be

    with pytest.raises(ValueError, match="over the 1024-byte limit"):
        table_rows.partition_key("a" * 513)
    with pytest.raises(ValueError, match="over the 1024-byte limit"):
        table_rows.partition_key("/" * 200)  # 600 characters once escaped


def test_row_keys_sort_in_id_order_and_before_the_meta_row() -> None:
    keys = [table_rows.head_row_key(n) for n in (1, 2, 10, 999, 123_456_789_012)]

    assert keys == sorted(keys)
    assert keys[0] == "000000000001"
    assert all(key < table_rows.EVENT_ROWS_END < table_rows.META_ROW_KEY for key in keys)


def test_a_small_event_is_one_row_holding_its_name_size_and_json() -> None:
    rows = table_rows.rows_of("p", StreamEvent(7, MESSAGE_DELTA, {"text": "hé"}))

    assert rows.continuation == []
    assert {name: value for name, value in rows.head.items() if name != "size"} == {
        "PartitionKey": "p",
        "RowKey": "000000000007",
        "event": MESSAGE_DELTA,
        "rows": 0,
        "p0": '{"text":"hé"}'.encode(),
    }
    assert rows.head["size"].value == len('{"text":"hé"}'.encode())


def test_data_over_64_kib_is_split_into_binary_parts_and_over_640_kib_into_tagged_rows() -> None:
    text = "x" * (1536 * 1024)

    rows = table_rows.rows_of("p", StreamEvent(3, "tool.result", {"result": text}))

    every_row = rows.in_write_order()
    parts = [[name for name in row if re.fullmatch(r"p\d+", name)] for row in every_row]
    assert [len(names) for names in parts] == [
        10,
        5,
        10,
    ]  # continuation rows first, the head last: 1.5 MiB + 13 bytes of JSON
    assert all(
        len(row[name]) <= table_rows.PART_BYTES for row, names in zip(every_row, parts, strict=True) for name in names
    )
    tag = rows.head["tag"]
    assert [row["RowKey"] for row in rows.continuation] == [f"000000000003.{tag}.0001", f"000000000003.{tag}.0002"]
    assert rows.head["rows"] == 2
    assert table_rows.events_from_rows([rows.head, *rows.continuation], 10) == [
        StreamEvent(3, "tool.result", {"result": text})
    ]


def test_transactions_hold_at_most_99_event_rows_and_900_kib_and_keep_heads_after_their_rows() -> None:
    small = [table_rows.rows_of("p", StreamEvent(n, MESSAGE_DELTA, {"n": n})) for n in range(1, 251)]
    big = [table_rows.rows_of("p", StreamEvent(n, "tool.result", {"r": "y" * 1_500_000})) for n in (251, 252)]

    plans = table_rows.plan_transactions([*small, *big])

    assert [len(plan.rows) for plan in plans[:3]] == [99, 99, 52]
    assert [plan.last_head_id for plan in plans[:3]] == [99, 198, 250]
    assert all(sum(table_rows.encoded_size(row) for row in plan.rows) <= table_rows.TRANSACTION_BYTES for plan in plans)
    written = [row["RowKey"] for plan in plans for row in plan.rows]
    for event in big:
        assert written.index(event.head["RowKey"]) > max(written.index(row["RowKey"]) for row in event.continuation)
    assert [plan.last_head_id for plan in plans[3:]] == [0, 0, 251, 0, 0, 252]


def test_reassembly_skips_rows_of_failed_writes_and_stops_at_an_event_not_all_there() -> None:
    first = table_rows.rows_of("p", StreamEvent(1, MESSAGE_DELTA, {"text": "one"}))
    big = table_rows.rows_of("p", StreamEvent(2, "tool.result", {"r": "z" * 800_000}))
    orphan = {**big.continuation[0], "RowKey": "000000000002.0ldwrite0000.0001"}  # a failed earlier write of id 2
    third = table_rows.rows_of("p", StreamEvent(3, MESSAGE_DELTA, {"text": "three"}))
    in_key_order = sorted([first.head, big.head, *big.continuation, orphan, third.head], key=lambda row: row["RowKey"])

    whole = table_rows.events_from_rows(in_key_order, 10)
    cut_short = table_rows.events_from_rows([row for row in in_key_order if row not in big.continuation], 10)

    assert [event.id for event in whole] == [1, 2, 3]
    assert whole[1].data == {"r": "z" * 800_000}
    assert [event.id for event in cut_short] == [1]
    assert [event.id for event in table_rows.events_from_rows(in_key_order, 2)] == [1, 2]
