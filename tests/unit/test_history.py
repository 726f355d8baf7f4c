"""Durable history: the provider's buffer behaves like core's in-memory one, ids are named like core's compaction,
the delivered response holds only what the agent wrote, and reconciliation matches messages by id."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Sequence
from typing import Any

import pytest
from agent_framework import AgentResponse, InMemoryHistoryProvider, Message
from agent_framework._compaction import _ensure_message_ids

from agent_host._conversation.history import (
    BUFFER_KEY,
    DurableHistoryProvider,
    assign_transcript_ids,
    delivered_response,
    reconcile_by_message_id,
    rename_clashing_summaries,
)
from agent_host._records import message_to_record

AGENT = "assistant"
NOW = 5_000


def load(provider: DurableHistoryProvider, state: dict[str, Any] | None) -> list[Message]:
    return asyncio.run(provider.get_messages("c1", state=state))


def save(provider: Any, state: dict[str, Any], messages: Sequence[Message]) -> None:
    asyncio.run(provider.save_messages("c1", messages, state=state))


def grouped(text: str, message_id: str, group_id: str, **extra: Any) -> Message:
    return Message(
        "assistant", [text], message_id=message_id, additional_properties={"_group": {"id": group_id}, **extra}
    )


def summary(text: str, message_id: str, of: list[str]) -> Message:
    return Message(
        "assistant", [text], message_id=message_id, additional_properties={"_group": {"_summary_of_message_ids": of}}
    )


# --- get_messages --------------------------------------------------------------------------------------------------


def test_loaded_messages_do_not_share_annotation_trees_with_stored_ones() -> None:
    stored = grouped("Paris is sunny.", "a1", "group_a1", _token_count=7)
    state = {BUFFER_KEY: [stored]}

    (loaded,) = load(DurableHistoryProvider(), state)
    loaded.additional_properties["_group"]["summarized_by_summary_id"] = "summary_1"
    loaded.additional_properties["_excluded"] = True

    assert stored.additional_properties == {"_group": {"id": "group_a1"}, "_token_count": 7}
    assert loaded.message_id == "a1" and loaded.text == "Paris is sunny."


def test_core_in_memory_provider_shares_the_trees_the_durable_one_detaches() -> None:
    # Why the copy exists: core hands out the stored objects, so a summarizing strategy writes into history.
    stored = grouped("Paris is sunny.", "a1", "group_a1")

    core_loaded = asyncio.run(InMemoryHistoryProvider().get_messages("c1", state={BUFFER_KEY: [stored]}))
    durable_loaded = load(DurableHistoryProvider(), {BUFFER_KEY: [stored]})

    assert core_loaded[0].additional_properties["_group"] is stored.additional_properties["_group"]
    assert durable_loaded[0].additional_properties["_group"] is not stored.additional_properties["_group"]


def test_loading_keeps_order_and_leaves_the_stored_buffer_as_it_was() -> None:
    buffer = [Message("user", ["Hi"], message_id="u1"), grouped("Hello", "a1", "g1")]
    state = {BUFFER_KEY: buffer}

    loaded = load(DurableHistoryProvider(), state)
    loaded.append(Message("user", ["More"], message_id="u2"))

    assert [m.message_id for m in loaded] == ["u1", "a1", "u2"]
    assert state[BUFFER_KEY] is buffer and [m.message_id for m in buffer] == ["u1", "a1"]


def test_skip_excluded_omits_what_compaction_excluded() -> None:
    buffer = [
        Message("user", ["Hi"], message_id="u1", additional_properties={"_excluded": True}),
        Message("assistant", ["Hello"], message_id="a1", additional_properties={"_excluded": False}),
        Message("user", ["Again"], message_id="u2"),
    ]

    skipping = load(DurableHistoryProvider(skip_excluded=True), {BUFFER_KEY: buffer})
    keeping = load(DurableHistoryProvider(), {BUFFER_KEY: buffer})

    assert [m.message_id for m in skipping] == ["a1", "u2"]
    assert [m.message_id for m in keeping] == ["u1", "a1", "u2"]


def test_no_state_or_an_empty_one_loads_nothing() -> None:
    assert load(DurableHistoryProvider(), None) == []
    assert load(DurableHistoryProvider(), {}) == []


# --- save_messages -------------------------------------------------------------------------------------------------


def transcript(*ids: str) -> list[Message]:
    return [Message("user" if i.startswith("u") else "assistant", [f"text of {i}"], message_id=i) for i in ids]


@pytest.mark.parametrize(
    ("existing", "incoming"),
    [
        ([], ["u1", "a1"]),
        (["u1", "a1"], ["u2", "a2"]),
        (["u1", "a1"], ["u1", "a1", "u2", "a2"]),
        (["u1", "a1", "u2"], ["u2", "a2"]),
        (["u1", "a1"], ["u1", "a1"]),
    ],
    ids=["first save", "append only", "full replay", "overlapping tail", "nothing new"],
)
def test_saving_appends_only_new_messages_as_core_does(existing: list[str], incoming: list[str]) -> None:
    durable_state = {BUFFER_KEY: transcript(*existing)}
    core_state = {BUFFER_KEY: transcript(*existing)}

    save(DurableHistoryProvider(), durable_state, transcript(*incoming))
    save(InMemoryHistoryProvider(), core_state, transcript(*incoming))

    saved = [m.message_id for m in durable_state[BUFFER_KEY]]
    assert saved == [m.message_id for m in core_state[BUFFER_KEY]]
    assert saved == list(dict.fromkeys([*existing, *incoming]))


def test_a_repeated_unnamed_user_input_is_kept_as_core_keeps_it() -> None:
    durable_state = {BUFFER_KEY: [Message("user", ["Hi"])]}
    core_state = {BUFFER_KEY: [Message("user", ["Hi"])]}

    save(DurableHistoryProvider(), durable_state, [Message("user", ["Hi"])])
    save(InMemoryHistoryProvider(), core_state, [Message("user", ["Hi"])])

    assert [m.text for m in durable_state[BUFFER_KEY]] == [m.text for m in core_state[BUFFER_KEY]] == ["Hi", "Hi"]


def test_saving_keeps_the_existing_message_objects() -> None:
    existing = transcript("u1", "a1")
    state = {BUFFER_KEY: list(existing)}

    save(DurableHistoryProvider(), state, transcript("u2"))

    assert all(saved is kept for saved, kept in zip(state[BUFFER_KEY], existing, strict=False))
    assert [m.message_id for m in state[BUFFER_KEY]] == ["u1", "a1", "u2"]


def test_saving_nothing_or_without_state_changes_nothing() -> None:
    state = {BUFFER_KEY: transcript("u1")}
    buffer = state[BUFFER_KEY]

    save(DurableHistoryProvider(), state, [])
    asyncio.run(DurableHistoryProvider().save_messages("c1", transcript("u2"), state=None))

    assert state[BUFFER_KEY] is buffer and [m.message_id for m in buffer] == ["u1"]


# --- replacing -----------------------------------------------------------------------------------------------------

OPTIONS = [name for name in inspect.signature(InMemoryHistoryProvider.__init__).parameters if name != "self"]


def options_of(provider: Any) -> dict[str, Any]:
    return {name: getattr(provider, name) for name in OPTIONS}


def test_replacing_copies_every_option_of_the_in_memory_provider() -> None:
    in_memory = InMemoryHistoryProvider(
        "team_history",
        load_messages=False,
        store_inputs=False,
        store_context_messages=True,
        store_context_from={"rag", "memory"},
        store_outputs=False,
        skip_excluded=True,
    )

    durable = DurableHistoryProvider.replacing(in_memory)

    assert set(OPTIONS) == {
        "source_id",
        "load_messages",
        "store_inputs",
        "store_context_messages",
        "store_context_from",
        "store_outputs",
        "skip_excluded",
    }
    assert options_of(durable) == options_of(in_memory)
    assert options_of(durable)["source_id"] == "team_history"


def test_replacing_a_default_provider_keeps_the_source_id_compaction_looks_for() -> None:
    durable = DurableHistoryProvider.replacing(InMemoryHistoryProvider())

    assert options_of(durable) == options_of(InMemoryHistoryProvider())
    assert durable.source_id == "in_memory" == DurableHistoryProvider().source_id


# --- assign_transcript_ids -----------------------------------------------------------------------------------------


def ids_after(assign: Any, ids: list[str | None]) -> list[str | None]:
    messages = [Message("user", [f"m{n}"], message_id=message_id) for n, message_id in enumerate(ids)]
    assign(messages)
    return [message.message_id for message in messages]


@pytest.mark.parametrize(
    "ids",
    [
        [None, None, None],
        ["u1", None, "a1", None],
        [None, "msg_0", None, None],
        [None, "msg_5", "msg_0", None, "msg_4"],
        ["msg_3", None, None, None],
    ],
)
def test_unnamed_messages_get_the_ids_core_compaction_would_give(ids: list[str | None]) -> None:
    assert ids_after(assign_transcript_ids, ids) == ids_after(_ensure_message_ids, ids)


def test_unnamed_messages_are_named_by_position_then_the_next_free_number() -> None:
    assert ids_after(assign_transcript_ids, [None, "msg_0", None, "msg_4", None]) == [
        "msg_5",
        "msg_0",
        "msg_2",
        "msg_4",
        "msg_6",
    ]


def test_a_repeated_id_is_renamed_so_every_id_is_unique() -> None:
    assert ids_after(assign_transcript_ids, ["a1", "a1", None]) == ["a1", "msg_1", "msg_2"]
    assert ids_after(assign_transcript_ids, ["msg_1", "msg_1"]) == ["msg_1", "msg_2"]
    assert ids_after(assign_transcript_ids, ["x", "msg_1", "x", "msg_2"]) == ["x", "msg_1", "msg_4", "msg_2"]


def test_naming_twice_changes_nothing() -> None:
    messages = [Message("user", [f"m{n}"], message_id=i) for n, i in enumerate([None, "a", "a", "msg_0"])]
    assign_transcript_ids(messages)
    first = [m.message_id for m in messages]

    assign_transcript_ids(messages)

    assert [m.message_id for m in messages] == first
    assert len(set(first)) == 4


# --- rename_clashing_summaries ------------------------------------------------------------------------------------


def linked(text: str, message_id: str, by: str, *, excluded: bool = True) -> Message:
    """A message a summary stands for, as core's SummarizationStrategy leaves it."""
    props = {"_excluded": excluded, "_exclude_reason": "summarized", "_group": {"id": f"group_{message_id}"}}
    props["_group"]["_summarized_by_summary_id"] = by
    return Message("user", [text], message_id=message_id, additional_properties=props)


def written_summary(message_id: str, of: list[str]) -> Message:
    group = {"id": f"group_{message_id}", "_summary_of_message_ids": of}
    return Message("assistant", ["Summary."], message_id=message_id, additional_properties={"_group": group})


def link_of(message: Message) -> str | None:
    return message.additional_properties["_group"].get("_summarized_by_summary_id")


def test_a_new_summary_taking_a_stored_summarys_id_is_renamed_and_what_it_stands_for_follows() -> None:
    # After retention deleted messages, core named the new summary `summary_5` again: the stored summary of that
    # name is now one of the messages it stands for, and core, counting the two as one group, included it again.
    stored_summary = written_summary("summary_5", ["m1"])
    stored_summary.additional_properties.update(_excluded=False, _exclude_reason="summarized")
    stored_summary.additional_properties["_group"]["_summarized_by_summary_id"] = "summary_5"
    earlier = linked("fact one", "m1", "summary_5")
    newly = linked("fact two", "m2", "summary_5")
    new = written_summary("summary_5", ["summary_5", "m2"])
    buffer = [new, stored_summary, earlier, newly, Message("user", ["newest"], message_id="t7.in")]

    rename_clashing_summaries(buffer, [stored_summary, earlier, newly, buffer[-1]], "t7")

    assert [m.message_id for m in buffer] == ["t7.summary", "summary_5", "m1", "m2", "t7.in"]
    assert new.additional_properties["_group"]["id"] == "group_t7.summary"
    assert new.additional_properties["_group"]["_summary_of_message_ids"] == ["summary_5", "m2"]
    assert [link_of(m) for m in (stored_summary, earlier, newly)] == ["t7.summary", "summary_5", "t7.summary"]
    assert stored_summary.additional_properties["_excluded"] is True  # excluded again, as core wrote it
    assert earlier.additional_properties["_excluded"] is True


@pytest.mark.parametrize("order", ["newest first", "oldest first"])
def test_summaries_clashing_in_one_turn_get_the_turns_ids_and_keep_their_links(order: str) -> None:
    # Stored summaries hold `summary_3` and `summary_9`; this turn core wrote a and then b under the same names,
    # and folded a into b.
    stored_summaries = [written_summary("summary_3", ["m0"]), written_summary("summary_9", ["m0"])]
    a = written_summary("summary_3", ["m1"])
    b = written_summary("summary_9", ["summary_3", "m2"])
    a.additional_properties.update(_excluded=True, _exclude_reason="summarized")
    a.additional_properties["_group"]["_summarized_by_summary_id"] = "summary_9"
    stood_for = [linked("one", "m1", "summary_3"), linked("two", "m2", "summary_9")]
    new = [b, a] if order == "newest first" else [a, b]
    buffer = [*new, *stored_summaries, *stood_for]

    rename_clashing_summaries(buffer, [*stored_summaries, *stood_for], "t7")

    assert [summary.message_id for summary in new] == ["t7.summary", "t7.summary2"]
    assert [m.message_id for m in stored_summaries] == ["summary_3", "summary_9"]
    assert [link_of(a), *map(link_of, stood_for)] == [b.message_id, a.message_id, b.message_id]
    assert [link_of(m) for m in stored_summaries] == [None, None]


def test_a_new_summary_whose_name_no_stored_message_holds_keeps_cores_name() -> None:
    stored = [written_summary("summary_4", ["m1"]), linked("one", "m1", "summary_4")]
    buffer = [written_summary("summary_6", ["summary_4"]), *stored, Message("user", ["new"], message_id="t2.in")]
    before = copy.deepcopy(buffer)

    rename_clashing_summaries(buffer, stored, "t2")

    assert [m.to_dict() for m in buffer] == [m.to_dict() for m in before]


# --- ids of deleted messages ------------------------------------------------------------------------------------------


def test_an_id_a_stored_summary_still_lists_is_never_given_to_a_new_message() -> None:
    # Retention deleted msg_1 and msg_2, which `summary_0` stands for; its list still names them. The new answer is
    # at position 2: named `msg_2` again, the summary would seem to stand for it.
    stored = [written_summary("summary_0", ["msg_1", "msg_2"]), Message("user", ["q"], message_id="t5.in")]
    answer = Message("assistant", ["a"])

    assign_transcript_ids([*stored, answer], stored)

    assert answer.message_id == "msg_3"
    assert stored[0].additional_properties["_group"]["_summary_of_message_ids"] == ["msg_1", "msg_2"]


def test_a_new_message_core_named_with_a_retired_id_is_renamed_and_its_group_and_links_follow() -> None:
    # Core named this run's answer `msg_2` by its position and at once summarized it in `summary_9`.
    stored = [written_summary("summary_0", ["msg_1", "msg_2"]), Message("user", ["q"], message_id="t5.in")]
    answer = linked("a", "msg_2", "summary_9")
    new_summary = written_summary("summary_9", ["msg_2"])
    buffer = [stored[0], new_summary, stored[1], answer]

    assign_transcript_ids(buffer, stored)

    assert [m.message_id for m in buffer] == ["summary_0", "summary_9", "t5.in", "msg_4"]
    assert answer.additional_properties["_group"]["id"] == "group_msg_4"
    assert new_summary.additional_properties["_group"]["_summary_of_message_ids"] == ["msg_4"]
    assert link_of(answer) == "summary_9"
    assert stored[0].additional_properties["_group"]["_summary_of_message_ids"] == ["msg_1", "msg_2"]


def test_a_new_summary_named_like_a_deleted_summary_a_stored_one_lists_gets_the_turns_id() -> None:
    stored = [written_summary("summary_5", ["summary_1", "m2"]), Message("user", ["q"], message_id="t7.in")]
    new = written_summary("summary_1", ["t7.in"])
    stood_for = linked("q", "t7.in", "summary_1")
    buffer = [stored[0], new, stood_for]

    rename_clashing_summaries(buffer, [stored[0]], "t7")

    assert new.message_id == "t7.summary"
    assert link_of(stood_for) == "t7.summary"


# --- delivered_response --------------------------------------------------------------------------------------------


def test_compaction_summaries_are_not_delivered() -> None:
    response = AgentResponse(
        messages=[
            Message("assistant", ["call"], message_id="c1"),
            summary("[Tool results: lookup: 42]", "s1", ["c1", "r1"]),
            Message("assistant", ["The answer is 42."], message_id="a1"),
        ],
        response_id="resp-1",
        usage_details={"input_token_count": 3, "output_token_count": 2},
    )

    delivered = delivered_response(response, "t1")

    assert [m.message_id for m in delivered.messages] == ["c1", "a1"]
    assert [m.text for m in delivered.messages] == ["call", "The answer is 42."]
    assert "[Tool results" not in delivered.text
    assert (delivered.response_id, delivered.usage_details) == ("resp-1", response.usage_details)
    assert [m.message_id for m in response.messages] == ["c1", "s1", "a1"]


def test_a_group_annotation_without_summary_links_is_delivered() -> None:
    response = AgentResponse(messages=[grouped("Hello", "a1", "group_a1")])

    assert [m.message_id for m in delivered_response(response, "t1").messages] == ["a1"]


def test_unnamed_messages_are_named_after_the_turn_on_copies() -> None:
    unnamed = [Message("assistant", ["First."]), Message("assistant", ["Second."])]
    named = Message("assistant", ["Named."], message_id="t1.0")
    response = AgentResponse(messages=[unnamed[0], named, unnamed[1]])

    delivered = delivered_response(response, "t1")

    assert [m.message_id for m in delivered.messages] == ["t1.1", "t1.0", "t1.2"]
    assert [m.text for m in delivered.messages] == ["First.", "Named.", "Second."]
    assert delivered.messages[1] is named
    assert all(m.message_id is None for m in unnamed)
    assert response.messages == [unnamed[0], named, unnamed[1]]


def test_a_response_with_nothing_to_change_is_delivered_as_it_is() -> None:
    response = AgentResponse(messages=[Message("assistant", ["Hi."], message_id="a1")])

    assert delivered_response(response, "t1") is response


# --- reconcile_by_message_id ---------------------------------------------------------------------------------------


def records(*messages: Message, at: int = 1_000) -> list[dict[str, Any]]:
    return [message_to_record(message, at + n, AGENT) for n, message in enumerate(messages)]


def test_the_buffer_order_wins_and_new_messages_are_stamped_now() -> None:
    stored = records(*transcript("u1", "a1"))
    buffer = [summary("Summary of u1.", "s1", ["u1"]), *transcript("u1", "a1", "u2")]

    result = reconcile_by_message_id(stored, buffer, NOW, agent_name=AGENT)

    assert [(r["id"], r["at"]) for r in result] == [("s1", NOW), ("u1", 1000), ("a1", 1001), ("u2", NOW)]
    assert result[0]["props"] == {"_group": {"_summary_of_message_ids": ["u1"]}}


def test_annotations_land_on_the_record_with_the_same_id() -> None:
    stored = records(*transcript("u1", "a1", "u2", "a2"))
    buffer = transcript("u1", "a1", "u2", "a2")
    buffer[1].additional_properties.update(_excluded=True, _exclude_reason="sliding_window")
    buffer.insert(0, summary("Summary.", "s1", ["u1", "a1"]))  # every later position shifts by one

    result = reconcile_by_message_id(stored, buffer, NOW, agent_name=AGENT)

    by_id = {r["id"]: r for r in result}
    assert by_id["a1"]["props"] == {"_excluded": True, "_exclude_reason": "sliding_window"}
    assert by_id["a1"]["text"] == "text of a1"
    assert "props" not in by_id["u2"] and "props" not in by_id["a2"]


def test_a_stored_message_missing_from_the_buffer_stays_after_its_stored_predecessor() -> None:
    stored = records(*transcript("u1", "a1", "u2", "a2", "u3"))
    buffer = transcript("a1", "a2", "u4")  # u1, u2 and u3 are not in the buffer

    result = reconcile_by_message_id(stored, buffer, NOW, agent_name=AGENT)

    assert [r["id"] for r in result] == ["u1", "a1", "u2", "a2", "u3", "u4"]
    assert [r["at"] for r in result] == [1000, 1001, 1002, 1003, 1004, NOW]


def test_kept_messages_follow_their_predecessor_when_the_buffer_reorders() -> None:
    stored = records(*transcript("u1", "a1", "u2"))
    buffer = transcript("u1", "s9")  # a1 and u2 left the buffer; s9 is new

    result = reconcile_by_message_id(stored, buffer, NOW, agent_name=AGENT)

    assert [r["id"] for r in result] == ["u1", "a1", "u2", "s9"]


def test_records_the_run_left_unchanged_are_reused_as_they_are() -> None:
    messages = transcript("u1", "a1")
    stored = records(*messages)
    by_message = {id(message): record for message, record in zip(messages, stored, strict=True)}
    buffer = [*messages, *transcript("u2")]

    result = reconcile_by_message_id(stored, buffer, NOW, agent_name=AGENT, reuse=lambda m: by_message.get(id(m)))

    assert result[0] is stored[0] and result[1] is stored[1]
    assert result[2] == {"id": "u2", "role": "user", "text": "text of u2", "at": NOW}


def test_reuse_applies_per_message_when_the_run_changed_the_order() -> None:
    messages = transcript("u1", "a1", "u2")
    stored = records(*messages)
    unchanged = {id(messages[0]): stored[0], id(messages[2]): stored[2]}
    changed = copy.copy(messages[1])
    changed.additional_properties = {"_excluded": True}
    buffer = [summary("Summary.", "s1", ["u1"]), messages[0], changed, messages[2]]

    result = reconcile_by_message_id(stored, buffer, NOW, agent_name=AGENT, reuse=lambda m: unchanged.get(id(m)))

    assert [r["id"] for r in result] == ["s1", "u1", "a1", "u2"]
    assert result[1] is stored[0] and result[3] is stored[2]
    assert result[2] is not stored[1]
    assert result[2]["props"] == {"_excluded": True} and result[2]["at"] == 1001
    assert "props" not in stored[1]


def test_the_agents_own_name_is_implied_on_its_messages() -> None:
    own = Message("assistant", ["Mine."], message_id="a1", author_name=AGENT)
    other = Message("assistant", ["Theirs."], message_id="a2", author_name="planner")

    result = reconcile_by_message_id([], [own, other], NOW, agent_name=AGENT)

    assert "author" not in result[0]
    assert result[1]["author"] == "planner"
