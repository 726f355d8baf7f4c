"""The published host's stored conversation read as our message records: ids, roles, authors, times and contents.

`PUBLISHED_STATE` was written by agent-framework-durabletask 1.0.0b260922 itself (a turn with a tool call, a
reasoning content it stores as `unknown`, and a failed turn it stores as an error response); only its times were
fixed here.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from agent_framework import Message

from agent_host._errors import StateCorruptError
from agent_host._published_state import read_published_conversation
from agent_host._records import record_to_message

RECEIVED_MS = 1_800_000_000_000
JAN_1 = 1_767_225_600_000  # 2026-01-01T00:00:00Z

PUBLISHED_STATE: dict[str, Any] = {
    "schemaVersion": "1.1.0",
    "data": {
        "conversationHistory": [
            {
                "$type": "request",
                "correlationId": "c1",
                "createdAt": "2026-01-01T00:00:00+00:00",
                "messages": [
                    {
                        "role": "user",
                        "contents": [{"$type": "text", "text": "My codename is BLUEHERON."}],
                        "createdAt": "2026-01-01T00:00:00+00:00",
                    }
                ],
                "responseType": "text",
            },
            {
                "$type": "response",
                "correlationId": "c1",
                "createdAt": "2026-01-01T00:00:01+00:00",
                "messages": [
                    {
                        "role": "assistant",
                        "contents": [
                            {
                                "$type": "functionCall",
                                "callId": "k1",
                                "name": "get_weather",
                                "arguments": {"city": "Paris"},
                            }
                        ],
                    },
                    {"role": "tool", "contents": [{"$type": "functionResult", "callId": "k1", "result": "sunny"}]},
                    {
                        "role": "assistant",
                        "contents": [
                            {"$type": "unknown", "content": {"type": "text_reasoning", "text": "thinking"}},
                            {"$type": "text", "text": "Noted."},
                        ],
                        "authorName": "Joker",
                    },
                ],
            },
            {
                "$type": "request",
                "correlationId": "c2",
                "createdAt": "2026-01-01T00:01:00+00:00",
                "messages": [{"role": "user", "contents": [{"$type": "text", "text": "Crash please."}]}],
                "responseType": "text",
            },
            {
                "$type": "response",
                "correlationId": "c2",
                "createdAt": "2026-01-01T00:01:01+00:00",
                "messages": [
                    {
                        "role": "assistant",
                        "contents": [{"$type": "error", "message": "model down", "errorCode": "500", "details": None}],
                    }
                ],
            },
        ]
    },
}


def messages_of(state: Any) -> list[Message]:
    return [
        record_to_message(record, "Joker")
        for record in read_published_conversation(state, "Joker", RECEIVED_MS).messages
    ]


def test_a_published_conversation_becomes_our_records_with_stable_ids() -> None:
    imported = read_published_conversation(json.dumps(PUBLISHED_STATE), "Joker", RECEIVED_MS)

    messages = [record_to_message(record, "Joker") for record in imported.messages]
    assert [(m.message_id, m.role, m.text) for m in messages] == [
        ("c1.q0", "user", "My codename is BLUEHERON."),
        ("c1.a0", "assistant", ""),
        ("c1.a1", "tool", ""),
        ("c1.a2", "assistant", "Noted."),
        ("c2.q0", "user", "Crash please."),
    ]
    call, result = messages[1].contents[0], messages[2].contents[0]
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
        "function_call",
        "k1",
        "get_weather",
        {"city": "Paris"},
    )
    assert (result.type, result.call_id, result.result) == ("function_result", "k1", "sunny")
    assert messages[3].author_name == "Joker" and [c.type for c in messages[3].contents] == ["text"]
    assert [record["at"] for record in imported.messages] == [
        JAN_1,
        JAN_1 + 1000,
        JAN_1 + 1000,
        JAN_1 + 1000,
        JAN_1 + 60_000,
    ]
    assert imported.source == {
        "entity": "dafx-joker",
        "schemaVersion": "1.1.0",
        "entries": 4,
        "messages": 5,
        "skipped": 2,
    }


def test_importing_the_same_state_twice_gives_the_same_records() -> None:
    first = read_published_conversation(PUBLISHED_STATE, "Joker", RECEIVED_MS)
    again = read_published_conversation(copy.deepcopy(PUBLISHED_STATE), "Joker", RECEIVED_MS + 5)

    assert first == again


def test_files_by_uri_data_and_hosted_id_keep_their_references() -> None:
    state = copy.deepcopy(PUBLISHED_STATE)
    state["data"]["conversationHistory"][0]["messages"][0]["contents"] += [
        {"$type": "uri", "uri": "https://example.com/cat.png", "mediaType": "image/png"},
        {"$type": "data", "uri": "data:image/png;base64,iVBORw0KGgo=", "mediaType": "image/png"},
        {"$type": "hostedFile", "fileId": "file-1"},
        {"$type": "hostedVectorStore", "vectorStoreId": "vs-1"},
        {"$type": "usage", "usage": {"inputTokenCount": 3}},
    ]

    contents = messages_of(state)[0].contents

    assert [(c.type, c.uri, c.media_type) for c in contents[1:3]] == [
        ("uri", "https://example.com/cat.png", "image/png"),
        ("data", "data:image/png;base64,iVBORw0KGgo=", "image/png"),
    ]
    assert (contents[3].type, contents[3].file_id) == ("hosted_file", "file-1")
    assert (contents[4].type, contents[4].vector_store_id) == ("hosted_vector_store", "vs-1")
    assert len(contents) == 5  # usage is not a message's content


def test_an_older_entry_tag_and_a_missing_time_are_read() -> None:
    state = {
        "schemaVersion": "1.0.0",
        "data": {
            "conversationHistory": [
                {
                    "json_type": "request",
                    "correlationId": "x",
                    "messages": [{"role": "user", "contents": [{"$type": "text", "text": "hi"}]}],
                }
            ]
        },
    }

    (record,) = read_published_conversation(state, "Joker", RECEIVED_MS).messages

    assert (record["id"], record["text"], record["at"]) == ("x.q0", "hi", RECEIVED_MS)


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ([], "is not a JSON object (got list)"),
        ({"data": {"conversationHistory": []}}, "has schemaVersion None; this host imports version 1.x"),
        ({"schemaVersion": "2.0.0", "data": {}}, "has schemaVersion '2.0.0'"),
        ({"schemaVersion": "1.1.0", "data": {"conversationHistory": {}}}, "has no data.conversationHistory list"),
        (
            {
                "schemaVersion": "1.1.0",
                "data": {"conversationHistory": [{"$type": "note", "correlationId": "c", "messages": []}]},
            },
            "unknown kind",
        ),
        (
            {
                "schemaVersion": "1.1.0",
                "data": {
                    "conversationHistory": [{"$type": "request", "correlationId": "c", "messages": [{"contents": []}]}]
                },
            },
            "a message without a role at data.conversationHistory[0].messages[0]",
        ),
        (
            {
                "schemaVersion": "1.1.0",
                "data": {
                    "conversationHistory": [
                        {
                            "$type": "request",
                            "correlationId": "c",
                            "messages": [{"role": "user", "contents": [{"$type": "functionCall", "name": "f"}]}],
                        }
                    ]
                },
            },
            "a functionCall content that cannot be read",
        ),
    ],
)
def test_state_that_cannot_be_imported_is_state_corrupt_naming_the_problem(state: Any, problem: str) -> None:
    # That host resets a state without schemaVersion silently; an import refuses it and changes nothing.
    with pytest.raises(StateCorruptError) as caught:
        read_published_conversation(state, "Joker", RECEIVED_MS)

    assert caught.value.code == "state_corrupt" and caught.value.status == 422
    assert problem in caught.value.message
    assert "Nothing was imported or changed" in caught.value.message
