"""Faults the local host injects: a killed process, a crash before commit, failing models and tools, bad state.

Nothing acknowledged is lost, nothing is answered twice, a failed turn leaves the conversation as it was, and state
this code cannot read is refused with a clear error and left byte for byte as it was, never reset.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
    Agent,
    ChatResponse,
    CompactionProvider,
    Content,
    InMemoryHistoryProvider,
    Message,
    SummarizationStrategy,
    tool,
)
from apps import build_app, entity_function, make_agent
from batches import EntityDriver
from chat_clients import ScriptedChatClient
from clocks import ManualClock
from faults import crash_before_entity_commit
from hosting import RunningHost
from local_host.served import ServedProcess, serve_command
from slow_app import CALL_LOG_VARIABLE, DELAY_VARIABLE, answer_to

from agent_host import HostSettings, OfflineChatClient
from agent_host._conversation.state import SCHEMA_VERSION, decode_state
from agent_host._conversation.turn_receipts import answer_messages
from agent_host._records import message_text, record_author
from agent_host._streaming.journal import JOURNAL_SUFFIX, MODEL_RESPONSE
from agent_host._streaming.sqlite_store import STREAMS_FILE_NAME

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# One state as each schema version stored it: every version this host ever wrote must stay readable.
SAMPLES = {version: ROOT / "tests" / "data" / f"state_v{version}_sample.json" for version in (1, 2, 3, 4, 5)}
BASE = "/api/agents/assistant/conversations"
ENTITY = "conversation_assistant"


def history_of(running: RunningHost, conversation: str) -> list[tuple[str, str]]:
    reply = running.request("GET", f"{BASE}/{conversation}/messages?includeExcluded=true")
    assert reply.status == 200, reply.body
    return [(message["role"], message["text"]) for message in reply.json()["messages"]]


# -- the host process is killed in the middle of turns and restarted -------------------------------------------------


class ServedHost(ServedProcess):
    """`python -m agent_host serve --app slow_app:app` in a subprocess, its model logging calls to `call_log`.

    The slow app lives next to this file, so that directory (not `tests/`) goes on the child's PYTHONPATH.
    """

    def __init__(self, workdir: Path, call_log: Path) -> None:
        env = {CALL_LOG_VARIABLE: str(call_log), DELAY_VARIABLE: "0.2"}
        super().__init__(workdir, serve_command("slow_app:app"), env, app_dir=HERE, request_timeout=10)


@dataclass
class Sender:
    """Posts one conversation's turns in order without waiting for answers, noting which were acknowledged."""

    host: ServedHost
    conversation: str
    turns: int
    spacing: float
    acknowledged: list[tuple[str, str]] = field(default_factory=list)
    unacknowledged: str | None = None

    def run(self) -> None:
        for number in range(self.turns):
            message = f"{self.conversation} says {number}"
            try:
                status, body = self.host.request(
                    "POST", f"{BASE}/{self.conversation}/turns", {"message": message, "wait": False}
                )
            except OSError:
                self.unacknowledged = message  # the host died before answering: the signal may or may not be stored
                return
            assert status == 202, body
            self.acknowledged.append((message, body["turnId"]))
            time.sleep(self.spacing)


def stored_states(state_dir: Path) -> dict[str, dict[str, Any]]:
    """Every conversation in the host's database, each decoded and validated as this version reads it."""
    connection = sqlite3.connect(state_dir / "entities.sqlite3")
    try:
        rows = connection.execute("SELECT key, state FROM entities WHERE name = ?", (ENTITY,)).fetchall()
    finally:
        connection.close()
    return {key: decode_state(text) for key, text in rows}


def journaled_answers(state_dir: Path) -> set[str]:
    """The messages whose turn journaled its model call (a checkpoint) in the host's stream store: a re-run of such
    a turn replays the answer instead of calling the model (docs/exactly-once.md)."""
    connection = sqlite3.connect(state_dir / STREAMS_FILE_NAME)
    try:
        rows = connection.execute(
            "SELECT data FROM turn_stream_events WHERE stream LIKE ? AND event = ?",
            (f"%{JOURNAL_SUFFIX}", MODEL_RESPONSE),
        ).fetchall()
    finally:
        connection.close()
    answers = [json.loads(data)["response"]["messages"][0]["contents"][0]["text"] for (data,) in rows]
    return {answer.removeprefix(answer_to("")) for answer in answers}


def user_messages(state: Mapping[str, Any]) -> list[str]:
    return [record["text"] for record in state["messages"] if record["role"] == "user"]


def read_calls(call_log: Path) -> list[str]:
    if not call_log.exists():
        return []
    return [json.loads(line)["message"] for line in call_log.read_text().splitlines()]


def test_killed_host_answers_every_acknowledged_turn_exactly_once_after_restart(tmp_path: Path) -> None:
    call_log = tmp_path / "calls.jsonl"
    host = ServedHost(tmp_path, call_log)
    senders = [Sender(host, f"k{number}", turns=8, spacing=0.1) for number in range(6)]
    threads = [threading.Thread(target=sender.run) for sender in senders]
    try:
        host.start()
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        # Kill once turns are committed, running and queued: on a loaded machine acknowledgements can trail the
        # model calls, so wait for both rather than hope the scenario happened.
        while len(read_calls(call_log)) < 10 or sum(len(sender.acknowledged) for sender in senders) < 12:
            assert time.monotonic() < deadline, "the model was not called 10 times and 12 turns acknowledged in 30 s"
            time.sleep(0.005)
        host.kill()
        for thread in threads:
            thread.join(30)
        calls_before_restart = read_calls(call_log)
        committed_before = {key: user_messages(state) for key, state in stored_states(host.state_dir).items()}
        journaled = journaled_answers(host.state_dir)

        host.start()
        answers = {}
        deadline = time.monotonic() + 30
        for sender in senders:
            for _, turn_id in sender.acknowledged:
                answers[turn_id] = poll_turn(host, sender.conversation, turn_id, deadline)
        histories = {
            sender.conversation: host.request("GET", f"{BASE}/{sender.conversation}/messages")[1] for sender in senders
        }
        follow_ups = {
            sender.conversation: host.request(
                "POST", f"{BASE}/{sender.conversation}/turns", {"message": "still there?"}
            )
            for sender in senders
        }
    finally:
        host.stop()
    final_states = stored_states(host.state_dir)
    calls_after_restart = read_calls(call_log)[len(calls_before_restart) :]

    acknowledged = [(sender, message, turn_id) for sender in senders for message, turn_id in sender.acknowledged]
    committed = {message for messages in committed_before.values() for message in messages}
    interrupted = set(calls_before_restart) - committed
    queued = {message for _, message, _ in acknowledged} - set(calls_before_restart)
    print(  # the scenario this run produced, for the record (-s)
        f"\nacknowledged {len(acknowledged)} turns ({sum(s.unacknowledged is not None for s in senders)} senders "
        f"stopped by the kill); at the kill {len(committed)} were committed, {len(interrupted)} were running "
        f"and {len(queued)} queued; {len(calls_after_restart)} model calls after the restart"
    )
    assert len(acknowledged) >= 12
    assert committed, "the kill came before anything was committed"
    assert interrupted, "the kill did not interrupt a running turn"
    for sender, message, turn_id in acknowledged:
        status, body = answers[turn_id]
        assert (status, body.get("status"), body.get("text")) == (200, "completed", answer_to(message)), body
        assert final_states[sender.conversation]["turns"][turn_id]["status"] == "completed"
    for sender in senders:
        sent = [message for message, _ in sender.acknowledged]
        stored = user_messages(final_states[sender.conversation])
        # Each acknowledged message once, in order; a cut-off request may have been stored before the kill.
        tail = [] if sender.unacknowledged is None or sender.unacknowledged not in stored else [sender.unacknowledged]
        assert stored == [*sent, *tail, "still there?"], sender.conversation
        expected = [
            pair for message in [*sent, *tail] for pair in (("user", message), ("assistant", answer_to(message)))
        ]
        assert [(m["role"], m["text"]) for m in histories[sender.conversation]["messages"]] == expected
        assert follow_ups[sender.conversation][0] == 200
        assert follow_ups[sender.conversation][1]["text"] == "answer to still there?"
    # After the restart the model ran exactly the turns that were not committed before the kill, each once: the
    # interrupted ones again unless their model call was checkpointed (the call in flight is the cost of a crash),
    # the queued ones for the first time.
    rerun = Counter(message for message in calls_after_restart if message != "still there?")
    stored_turns = {message for state in final_states.values() for message in user_messages(state)} - {"still there?"}
    assert rerun == Counter(stored_turns - committed - journaled)
    assert interrupted - journaled <= set(rerun)


def poll_turn(host: ServedHost, conversation: str, turn_id: str, deadline: float) -> tuple[int, Any]:
    while True:
        status, body = host.request("GET", f"{BASE}/{conversation}/turns/{turn_id}")
        if status != 202 or time.monotonic() > deadline:
            return status, body
        time.sleep(0.05)


# -- a crash after the model ran, before the commit: redelivered, committed once ---------------------------------------

executed_tools: list[str] = []


@tool
def lookup(code: str) -> str:
    """Look a code up."""
    executed_tools.append(code)
    return f"code {code} is valid"


def test_crash_before_commit_on_every_turn_keeps_a_multi_turn_history_exact(tmp_path: Path) -> None:
    executed_tools.clear()
    client = ScriptedChatClient()
    running = RunningHost(lambda: build_app(make_agent(client, tools=[lookup])), tmp_path)
    assert running.host is not None
    crashed: set[int] = set()

    def crash_first_attempt(name: str, key: str, batch: Sequence[Any]) -> bool:
        first = batch[0].seq
        if first in crashed:
            return False
        crashed.add(first)
        return True

    crash_before_entity_commit(running.host.scheduler, crash_first_attempt)
    messages = ["first", 'call lookup {"code": "X1"}', "third", "fourth"]
    try:
        replies = [
            running.request("POST", f"{BASE}/c1/turns", {"message": message, "timeoutSeconds": 10})
            for message in messages
        ]
        history = history_of(running, "c1")
        state = decode_state(running.host.store.read_state(ENTITY, "c1") or "")
    finally:
        running.stop()

    assert len(crashed) == 4
    assert [reply.status for reply in replies] == [200, 200, 200, 200]
    # Model calls per turn: one crashed run and one committed run (the tool turn calls the model twice per run).
    assert len(client.calls) == 2 * (1 + 2 + 1 + 1)
    assert executed_tools == ["X1", "X1"]  # a tool that ran in the crashed attempt runs again on redelivery
    assert [reply.json()["text"] for reply in replies] == [
        "reply 2: first",
        "tool said code X1 is valid",
        "reply 8: third",
        "reply 10: fourth",
    ]
    assert history == [
        ("user", "first"),
        ("assistant", "reply 2: first"),
        ("user", 'call lookup {"code": "X1"}'),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "tool said code X1 is valid"),
        ("user", "third"),
        ("assistant", "reply 8: third"),
        ("user", "fourth"),
        ("assistant", "reply 10: fourth"),
    ]
    # The redelivered run saw exactly what the crashed one saw: nothing of the crashed run leaked into history.
    assert [m.text for m in client.calls[6]] == [m.text for m in client.calls[7]]
    assert [m.text for m in client.calls[8]] == [m.text for m in client.calls[9]]
    assert state["turnCount"] == 4 and sorted(state["turns"]) == sorted(r.json()["turnId"] for r in replies)


# -- the model raises, times out or answers garbage; a tool raises ---------------------------------------------------


class MisbehavingChatClient(ScriptedChatClient):
    """A model that misbehaves on cue: the last user message names the fault, anything else gets `ok: <text>`."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = 0

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        received = list(messages)
        self.calls.append(received)
        last = received[-1]
        asked = next(m.text for m in reversed(received) if m.role == "user")
        if last.role == "tool" and asked == "tool then raise":
            raise RuntimeError("second model call failed")
        if last.role == "tool":
            return ChatResponse(messages=[Message("assistant", [f"after tool: {last.contents[0].result}"])])
        text = last.text or ""
        if text == "raise":
            raise ConnectionError("model endpoint reset the connection: secret-token-123")
        if text == "hang":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        if text == "no messages":
            return ChatResponse(messages=[])
        if text == "no contents":
            return ChatResponse(messages=[Message("assistant", [])])
        if text in GARBAGE_CALLS:
            name, arguments = GARBAGE_CALLS[text]
            return ChatResponse(
                messages=[Message("assistant", [Content.from_function_call("g1", name, arguments=arguments)])]
            )
        return ChatResponse(messages=[Message("assistant", [f"ok: {text}"])])


GARBAGE_CALLS = {
    "tool then raise": ("note", '{"text": "side effect"}'),
    "unknown tool": ("teleport", '{"to": "Mars"}'),
    "invalid arguments": ("explode", "{not json"),
    "tool raises": ("explode", '{"reason": "test"}'),
}


notes: list[str] = []


@tool
def note(text: str) -> str:
    """Write a note down (a side effect that happens even if the turn later fails)."""
    notes.append(text)
    return "noted"


@tool
def explode(reason: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"tool blew up: {reason} secret-token-456")


@dataclass(frozen=True)
class FaultCase:
    """What a turn that hits a fault must answer, and what it must leave in the transcript."""

    status: int
    body: dict[str, Any]
    stored: list[tuple[str, str]]


TURN_FAILED = (
    "The agent run failed ({}). The conversation's earlier history is unchanged; send the next turn to continue."
)
FAULTS: dict[str, FaultCase] = {
    "raise": FaultCase(
        502,
        {"status": "failed", "error": {"code": "turn_failed", "message": TURN_FAILED.format("ConnectionError")}},
        [],
    ),
    "hang": FaultCase(
        502,
        {
            "status": "failed",
            "error": {
                "code": "turn_failed",
                "message": "The agent run took longer than 0.5 s (AGENT_HOST_RUN_TIMEOUT_SECONDS) and was cancelled. "
                "The conversation's earlier history is unchanged; send the next turn to continue.",
            },
        },
        [],
    ),
    # Core accepts an answer without messages or contents; so does the host: the turn completes with no text.
    "no messages": FaultCase(200, {"status": "completed", "text": ""}, [("user", "no messages")]),
    "no contents": FaultCase(200, {"status": "completed", "text": ""}, [("user", "no contents"), ("assistant", "")]),
    # Core's function loop turns a bad call into an error result for the model, which then answers.
    "unknown tool": FaultCase(
        200,
        {"status": "completed", "text": 'after tool: Error: Requested function "teleport" not found.'},
        [
            ("user", "unknown tool"),
            ("assistant", ""),
            ("tool", ""),
            ("assistant", 'after tool: Error: Requested function "teleport" not found.'),
        ],
    ),
    "invalid arguments": FaultCase(
        200,
        {"status": "completed", "text": "after tool: Error: Argument parsing failed."},
        [
            ("user", "invalid arguments"),
            ("assistant", ""),
            ("tool", ""),
            ("assistant", "after tool: Error: Argument parsing failed."),
        ],
    ),
    "tool raises": FaultCase(
        200,
        {"status": "completed", "text": "after tool: Error: Function failed."},
        [
            ("user", "tool raises"),
            ("assistant", ""),
            ("tool", ""),
            ("assistant", "after tool: Error: Function failed."),
        ],
    ),
    "tool then raise": FaultCase(
        502, {"status": "failed", "error": {"code": "turn_failed", "message": TURN_FAILED.format("RuntimeError")}}, []
    ),
}


# Function-scoped: azure-functions-durable shares one aiohttp session per process, so two hosts (two event loops)
# must never be alive at once, and a module-scoped host would outlive the tests that use it.
@pytest.fixture
def misbehaving(tmp_path: Path) -> Iterator[tuple[RunningHost, MisbehavingChatClient]]:
    client = MisbehavingChatClient()
    settings = HostSettings(run_timeout_seconds=0.5)
    running = RunningHost(lambda: build_app(make_agent(client, tools=[explode, note]), settings=settings), tmp_path)
    yield running, client
    running.stop()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_misbehaving_model_or_tool_leaves_the_conversation_working(misbehaving, fault: str) -> None:
    running, client = misbehaving
    conversation = fault.replace(" ", "-")
    expected = FAULTS[fault]
    running.request("POST", f"{BASE}/{conversation}/turns", {"message": "My name is Ada."})
    before = history_of(running, conversation)
    cancelled = client.cancelled
    notes.clear()

    reply = running.request("POST", f"{BASE}/{conversation}/turns", {"message": fault})
    polled = running.request("GET", f"{BASE}/{conversation}/turns/{reply.json()['turnId']}")
    after_fault = history_of(running, conversation)
    following = running.request("POST", f"{BASE}/{conversation}/turns", {"message": "next"})
    stored = running.host.store.read_state(ENTITY, conversation) if running.host else None

    # The request that ran the turn answers the failure's status; the turn resource reads back with 200.
    assert reply.status == expected.status and polled.status == 200
    assert {key: reply.json()[key] for key in expected.body} == expected.body
    assert {key: polled.json()[key] for key in expected.body} == expected.body
    assert after_fault == before + expected.stored  # a failed turn stores nothing; earlier history is untouched
    assert following.status == 200 and following.json()["text"] == "ok: next"
    assert [m.text for m in client.calls[-1]][-1] == "next"
    assert history_of(running, conversation) == [*after_fault, ("user", "next"), ("assistant", "ok: next")]
    assert stored is not None and "secret-token" not in stored  # exception details stay in the log
    assert client.cancelled == cancelled + (fault == "hang")  # a run over its time is cancelled, not left running
    # A tool that ran before the model failed keeps its side effect; the transcript does not record the call.
    assert notes == (["side effect"] if fault == "tool then raise" else [])


# -- stored state this version cannot read: refused with 422, never reset ------------------------------------------


def valid_state_text(running: RunningHost, conversation: str) -> str:
    running.request("POST", f"{BASE}/{conversation}/turns", {"message": "My name is Ada."})
    assert running.host is not None
    text = running.host.store.read_state(ENTITY, conversation)
    assert text is not None
    return text


def with_version(text: str, version: Any) -> str:
    state = json.loads(text)
    if version is _MISSING:
        del state["schemaVersion"]
    else:
        state["schemaVersion"] = version
    return json.dumps(state)


def with_field(text: str, name: str, value: Any) -> str:
    state = json.loads(text)
    state[name] = value
    return json.dumps(state)


_MISSING = object()
BAD_STATES: dict[str, tuple[Any, str, str]] = {
    # name: (how to spoil a valid state text, error code, a phrase the message must contain)
    "not JSON": (lambda text: "{this is not json", "state_corrupt", "not valid JSON"),
    "truncated": (lambda text: text[: len(text) // 2], "state_corrupt", "not valid JSON"),
    "empty": (lambda text: "", "state_corrupt", "not valid JSON"),
    "a JSON array": (lambda text: "[1, 2]", "state_corrupt", "not a JSON object"),
    "JSON null": (lambda text: "null", "state_corrupt", "not valid JSON"),
    "messages not a list": (lambda text: with_field(text, "messages", {"0": "hi"}), "state_corrupt", "'messages'"),
    "a turn record without status": (
        lambda text: with_field(text, "turns", {"t1": {"at": 1}}),
        "state_corrupt",
        "'turns.t1.status'",
    ),
    "an unknown field": (lambda text: with_field(text, "mood", "happy"), "state_corrupt", "'mood'"),
    "a turn naming a message the transcript lacks": (
        lambda text: with_field(text, "turns", {"t1": {"status": "completed", "messages": ["gone"], "at": 1}}),
        "state_corrupt",
        "names message 'gone', which the transcript does not hold",
    ),
    "a future version": (
        lambda text: with_version(text, SCHEMA_VERSION + 1),
        "state_version_unsupported",
        f"version {SCHEMA_VERSION + 1}; this host reads versions up to {SCHEMA_VERSION}",
    ),
    "version 0": (lambda text: with_version(text, 0), "state_version_unsupported", "version 0, older"),
    "no version": (lambda text: with_version(text, _MISSING), "state_version_unsupported", "no schemaVersion"),
    "the version as a string": (lambda text: with_version(text, "1"), "state_version_unsupported", "'1', which"),
}


@pytest.mark.parametrize("kind", list(BAD_STATES))
def test_unreadable_state_is_refused_with_422_and_left_byte_for_byte(scripted_host, kind: str) -> None:
    running, client = scripted_host
    assert running.host is not None
    conversation = "bad-" + kind.replace(" ", "-")
    spoil, code, phrase = BAD_STATES[kind]
    bad = spoil(valid_state_text(running, conversation))
    running.host.store.write_state(ENTITY, conversation, bad)
    calls = len(client.calls)

    read = running.request("GET", f"{BASE}/{conversation}")
    messages = running.request("GET", f"{BASE}/{conversation}/messages")
    turn = running.request("POST", f"{BASE}/{conversation}/turns", {"message": "What is my name?", "timeoutSeconds": 5})
    queued = running.request("POST", f"{BASE}/{conversation}/turns", {"message": "hello?", "wait": False})
    running.wait_idle()
    polled = running.request("GET", f"{BASE}/{conversation}/turns/{queued.json()['turnId']}")
    retention = running.request("PUT", f"{BASE}/{conversation}/retention", {"mode": "keep_all", "maxStateBytes": 65536})
    running.wait_idle()

    for reply in (read, messages, turn, polled):
        assert (reply.status, reply.json()["error"]["code"]) == (422, code), reply.body
        assert phrase in reply.json()["error"]["message"]
        assert (
            "nothing was changed" in reply.json()["error"]["message"].lower()
            or "left unchanged" in reply.json()["error"]["message"]
        )
    assert queued.status == 202  # accepted before the state is read; the entity then refuses the operation
    assert retention.status == 422 and retention.json()["error"]["code"] == code
    assert running.host.store.read_state(ENTITY, conversation) == bad
    assert len(client.calls) == calls  # the model never ran on state it could not read


def test_a_conversation_with_unreadable_state_can_still_be_deleted(scripted_host) -> None:
    running, _ = scripted_host
    assert running.host is not None
    valid_state_text(running, "doomed")
    running.host.store.write_state(ENTITY, "doomed", "{truncated")

    deleted = running.request("DELETE", f"{BASE}/doomed")
    stored = running.host.store.read_state(ENTITY, "doomed")
    gone = running.request("GET", f"{BASE}/doomed")
    fresh = running.request("POST", f"{BASE}/doomed/turns", {"message": "start over"})

    assert deleted.status == 204  # an explicit delete, the one way a conversation is reset
    assert stored is not None and decode_state(stored)["deleted"]["existed"] is True  # a readable tombstone
    assert gone.status == 404 and gone.json()["error"]["code"] == "conversation_not_found"
    assert fresh.status == 200 and fresh.json()["text"].endswith("start over")
    assert history_of(running, "doomed") == [("user", "start over"), ("assistant", fresh.json()["text"])]


# -- samples of every schema version ----------------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def sample_agent() -> Agent:
    """The agent that wrote the samples: tools, core history and summarizing compaction, as a user would set it up."""
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SummarizationStrategy(client=OfflineChatClient(), target_count=4, threshold=2),
        history_source_id=history.source_id,
    )
    return Agent(
        OfflineChatClient(),
        "You are a helpful test agent.",
        name="assistant",
        tools=[get_weather],
        context_providers=[history, compaction],
    )


SAMPLE_TURNS = [
    "My city is Oslo.",
    "use get_weather for Oslo",
    "My favourite color is green.",
    "use get_weather for Bergen",
    "What is my city?",
    "My name is Ada.",
]


def build_sample() -> dict[str, Any]:
    """Run the sample conversation through the real entity and return its stored state, in today's version.

    Write the checked-in file of a new schema version (only when adding a version, never to make a test pass):
    python -c "import sys; sys.path[:0] = ['tests', 'tests/reliability']; import json, test_faults as t;
    from agent_host._conversation.state import SCHEMA_VERSION as v;
    open(f'tests/data/state_v{v}_sample.json', 'w').write(json.dumps(t.build_sample(), indent=1) + '\\n')"
    """
    app = build_app(sample_agent(), clock=ManualClock(step_ms=1))
    driver = EntityDriver(entity_function(app, "assistant"), ENTITY, f"sample-v{SCHEMA_VERSION}")
    for number, message in enumerate(SAMPLE_TURNS):
        driver.run_turn(f"0000000000{number}sample", message)
    return driver.decoded()


def assert_holds_tool_calls_and_compaction_annotations(state: dict[str, Any]) -> None:
    assert state["schemaVersion"] == SCHEMA_VERSION
    kinds = {content["type"] for record in state["messages"] for content in record.get("contents", [])}
    assert {"function_call", "function_result"} <= kinds
    props = [record.get("props", {}) for record in state["messages"]]
    assert any(p.get(EXCLUDED_KEY) for p in props) and any(p.get(EXCLUDE_REASON_KEY) == "summarized" for p in props)
    assert any(SUMMARY_OF_MESSAGE_IDS_KEY in p.get(GROUP_ANNOTATION_KEY, {}) for p in props)
    assert any(SUMMARIZED_BY_SUMMARY_ID_KEY in p.get(GROUP_ANNOTATION_KEY, {}) for p in props)
    assert state["turnCount"] == len(SAMPLE_TURNS)


@pytest.mark.parametrize("version", list(SAMPLES))
def test_each_sample_is_read_with_its_tool_calls_and_compaction_annotations(version: int) -> None:
    text = SAMPLES[version].read_text()

    assert json.loads(text)["schemaVersion"] == version
    assert_holds_tool_calls_and_compaction_annotations(decode_state(text))


def test_the_sample_recipe_still_writes_the_same_kind_of_state_as_the_newest_sample() -> None:
    # Not compared byte for byte (times differ, and compaction parity work may move summaries): same top-level
    # fields, and still every kind of content and annotation the sample exists to cover.
    fresh = build_sample()

    assert_holds_tool_calls_and_compaction_annotations(fresh)
    assert fresh.keys() == decode_state(SAMPLES[SCHEMA_VERSION].read_text()).keys()


def test_version_1_is_read_with_every_author_and_answer_it_stored() -> None:
    # Version 1 stored every author; version 2 implies the agent's own name on its assistant messages.
    raw = json.loads(SAMPLES[1].read_text())
    upgraded = decode_state(SAMPLES[1].read_text())

    def authors(records: list[dict[str, Any]], agent: str | None) -> list[tuple[str, str | None]]:
        return [(record["id"], record_author(record, agent)) for record in records]

    v1_authors = [(record["id"], record.get("author")) for record in raw["messages"]]
    assert authors(upgraded["messages"], upgraded["agent"]) == v1_authors
    assert ("assistant", None) in [(r["role"], r["author"]) for r in upgraded["messages"] if "author" in r]
    assert [r for r in upgraded["messages"] if r["role"] == "assistant" and r.get("author") == "assistant"] == []
    for turn_id, record in raw["turns"].items():
        answer = answer_messages(upgraded, upgraded["turns"][turn_id])
        assert [m["id"] for m in answer] == [m["id"] for m in record["messages"]]
        assert authors(answer, upgraded["agent"]) == [(m["id"], m.get("author")) for m in record["messages"]]
        assert [message_text(m) for m in answer] == [message_text(m) for m in record["messages"]]


@pytest.mark.parametrize("version", list(SAMPLES))
def test_a_turn_runs_on_each_sample(version: int, tmp_path: Path) -> None:
    sample = SAMPLES[version].read_text()
    stored = decode_state(sample)
    key = stored["conversationId"]
    # A minute after the sample's last write, whatever today's date: its turn records are all still kept.
    clock = ManualClock(stored["updatedAt"] + 60_000)
    running = RunningHost(lambda: build_app(sample_agent(), clock=clock), tmp_path)
    assert running.host is not None
    try:
        running.host.store.write_state(ENTITY, key, sample)  # as an earlier build stored it
        reply = running.request("POST", f"{BASE}/{key}/turns", {"message": "What is my name?"})
        written = running.host.store.read_state(ENTITY, key) or ""
        after = decode_state(written)
        turns = {turn_id: running.request("GET", f"{BASE}/{key}/turns/{turn_id}") for turn_id in stored["turns"]}
    finally:
        running.stop()

    assert reply.status == 200 and reply.json()["text"] == "[offline model] Your name is Ada."
    assert json.loads(written)["schemaVersion"] == SCHEMA_VERSION  # upgraded state is written back upgraded
    assert after["turnCount"] == stored["turnCount"] + 1
    ids_after = [record["id"] for record in after["messages"]]
    assert [i for i in ids_after if i in {r["id"] for r in stored["messages"]}] == [r["id"] for r in stored["messages"]]
    assert [r["role"] for r in after["messages"][-2:]] == ["user", "assistant"]
    assert after["messages"][-2]["text"] == "What is my name?"
    assert set(stored["turns"]) <= set(after["turns"]) | set(after.get("expiredTurns", []))
    for turn_id, response in turns.items():
        answer = answer_messages(stored, stored["turns"][turn_id])
        assert response.status == 200
        assert response.json()["text"] == "".join(message_text(m) for m in answer)
        assert [m["authorName"] for m in response.json()["messages"]] == ["assistant"] * len(answer)
