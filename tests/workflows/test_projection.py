"""Context projection and delivery receipts (docs/workflows.md, L3-2 to L3-6; architecture.md, failure 17)."""

from __future__ import annotations

from agent_framework import Content, Message

from agent_host._workflows.codec import Identities, decode, encode
from agent_host._workflows.projection import Carried, DeliveryLedger, Occurrences, fingerprint, project


def conversation(occurrences: Occurrences, producer: str, texts: list[str]) -> list[Carried]:
    roles = ["user", "assistant"]
    return [occurrences.mint(producer, Message(roles[i % 2], [text])) for i, text in enumerate(texts)]


def texts(carried: list[Carried]) -> list[str]:
    return [item.message.text for item in carried]


def test_a_projection_of_1_and_3_then_2_and_4_delivers_2_and_4() -> None:
    occurrences = Occurrences()
    upstream = conversation(occurrences, "writer", ["m1", "m2", "m3", "m4"])
    receipts = DeliveryLedger()

    first = receipts.unseen("critic", [upstream[0], upstream[2]])
    receipts.record("critic", first)
    second = receipts.unseen("critic", [upstream[1], upstream[3]])

    assert texts(first) == ["m1", "m3"]
    # A high-water mark (the prototype's "highest position taken") would deliver only m4 here and lose m2.
    assert texts(second) == ["m2", "m4"]


def test_a_fan_out_hands_two_branches_the_same_messages_and_each_keeps_its_own_receipts() -> None:
    occurrences = Occurrences()
    upstream = conversation(occurrences, "writer", ["brief", "draft"])
    receipts = DeliveryLedger()

    to_optimist = receipts.unseen("optimist", upstream)
    receipts.record("optimist", to_optimist)
    to_skeptic = receipts.unseen("skeptic", upstream)
    receipts.record("skeptic", to_skeptic)

    assert texts(to_optimist) == ["brief", "draft"]
    assert texts(to_skeptic) == ["brief", "draft"]
    assert receipts.unseen("optimist", upstream) == []
    assert receipts.count("optimist") == receipts.count("skeptic") == 2


def test_fan_in_checks_each_producers_record_so_shared_history_arrives_once() -> None:
    occurrences = Occurrences()
    shared = conversation(occurrences, "writer", ["brief", "draft"])
    from_a = [*shared, occurrences.mint("a", Message("assistant", ["a says"]))]
    from_b = [*shared, occurrences.mint("b", Message("assistant", ["b says"]))]
    receipts = DeliveryLedger()

    first = receipts.unseen("judge", from_a)
    receipts.record("judge", first)
    second = receipts.unseen("judge", from_b)

    assert texts(first) == ["brief", "draft", "a says"]
    assert texts(second) == ["b says"]


def test_a_message_changed_in_place_is_a_new_revision_and_is_delivered_again() -> None:
    occurrences = Occurrences()
    (draft,) = conversation(occurrences, "writer", ["draft"])
    receipts = DeliveryLedger()
    receipts.record("editor", [draft])

    # A context filter that changes a message in place: what it returns is re-fingerprinted.
    def annotate(messages: list[Message]) -> list[Message]:
        messages[0].contents.append(Content.from_text(text=" (revised)"))
        return messages

    (revised,) = project("custom", annotate, [draft], [draft], minted_by="editor", occurrences=occurrences)

    assert revised.key.occurrence == draft.key.occurrence
    assert revised.key.revision != draft.key.revision
    assert receipts.unseen("editor", [revised]) == [revised]


def test_identical_text_from_two_turns_is_two_messages_not_one() -> None:
    occurrences = Occurrences()
    yes_one, yes_two = (occurrences.mint("human", Message("user", ["yes"])) for _ in range(2))
    receipts = DeliveryLedger()
    receipts.record("agent", [yes_one])

    assert receipts.unseen("agent", [yes_one, yes_two]) == [yes_two]


def test_last_agent_takes_the_reply_and_custom_takes_what_the_filter_returns_with_their_identities() -> None:
    occurrences = Occurrences()
    full = conversation(occurrences, "writer", ["ask", "answer"])
    reply = full[1:]

    def keep_user(messages: list[Message]) -> list[Message]:
        return [message for message in messages if message.role == "user"]

    last = project("last_agent", None, full, reply, minted_by="reviewer", occurrences=occurrences)
    custom = project("custom", keep_user, full, reply, minted_by="reviewer", occurrences=occurrences)
    everything = project("full", None, full, reply, minted_by="reviewer", occurrences=occurrences)

    assert [item.key for item in last] == [full[1].key]
    assert [item.key for item in custom] == [full[0].key]
    assert [item.key for item in everything] == [item.key for item in full]


def test_a_filter_that_writes_a_new_message_makes_a_new_occurrence_of_the_target() -> None:
    occurrences = Occurrences()
    full = conversation(occurrences, "writer", ["ask", "answer"])

    def summarize(messages: list[Message]) -> list[Message]:
        return [Message("user", [f"summary of {len(messages)} messages"])]

    (summary,) = project("custom", summarize, full, full[1:], minted_by="reviewer", occurrences=occurrences)

    assert summary.key.producer == "reviewer"
    assert summary.key.revision == fingerprint(summary.message)


def test_identity_travels_beside_the_message_and_never_rewrites_its_id() -> None:
    occurrences = Occurrences()
    original = occurrences.mint("writer", Message("assistant", ["hello"], message_id="app-id-7"))
    sender = Identities()
    sender.remember(original)

    wire = encode([original.message, original.message], sender)
    receiver = Identities()
    first, second = decode(wire, receiver, producer="relay", occurrences=Occurrences())

    assert first is second
    assert first.message_id == "app-id-7"
    assert "app-id-7" in str(wire) and wire[0]["key"] == original.key.to_json()
    assert receiver.key_of(first) == original.key
    assert receiver.key_of(second) == original.key


def test_a_new_message_in_a_response_and_its_conversation_is_one_occurrence_after_travel() -> None:
    fresh = Message("assistant", ["REWRITTEN"])
    wire = encode({"reply": [fresh], "conversation": [Message("user", ["ask"]), fresh]}, Identities())
    receiver = Identities()
    value = decode(wire, receiver, producer="upper", occurrences=Occurrences())

    assert value["reply"][0] is value["conversation"][1]
    assert receiver.key_of(value["reply"][0]) == receiver.key_of(value["conversation"][1])


def test_a_summary_inserted_mid_conversation_shifts_no_identity_and_leaves_annotations_where_they_were() -> None:
    occurrences = Occurrences()
    first = conversation(occurrences, "writer", ["m1", "m2", "m3"])
    first[1].message.additional_properties["_group"] = {"id": "g2"}
    receipts = DeliveryLedger()
    receipts.record("editor", first)
    summary = occurrences.mint("summarizer", Message("assistant", ["Summary: m1"]))
    fourth = occurrences.mint("writer", Message("user", ["m4"]))

    delta = receipts.unseen("editor", [first[0], summary, first[1], first[2], fourth])

    # Position-derived ids (the prototype's wf_{executor}_{position}) would now call m2 and m3 new and m4 seen.
    assert texts(delta) == ["Summary: m1", "m4"]
    assert first[1].message.additional_properties == {"_group": {"id": "g2"}}
    assert receipts.has_seen("editor", first[1].key) and receipts.has_seen("editor", first[2].key)
