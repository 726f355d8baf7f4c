"""Parity with in-process core: the same conversation, once in memory and once through the entity, cold every turn.

Side (a) runs core the ordinary way: one agent, one `AgentSession` kept in memory for the whole conversation.
Side (b) runs every turn through the conversation entity in the host's JSON batch format with a cold start first:
new client, agent and app objects, state only from the persisted JSON string. Every model call's input must be the
same, and so must the history each side would load next. Where the host differs from core on purpose, the test
says why in one line and asserts exactly that difference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    Agent,
    CharacterEstimatorTokenizer,
    CompactionProvider,
    InMemoryHistoryProvider,
    Message,
    SelectiveToolCallCompactionStrategy,
    SlidingWindowStrategy,
    SummarizationStrategy,
    TokenBudgetComposedStrategy,
    ToolResultCompactionStrategy,
    TruncationStrategy,
)
from apps import build_app, driver_for
from history_providers import ListHistoryProvider, SqliteHistoryProvider
from parity_fakes import (
    TOOL_RESULTS_PREFIX,
    CallLog,
    RecordingChatClient,
    ServiceConversations,
    ServiceStoringChatClient,
    get_time,
    get_weather,
)

from agent_host._conversation.history_plan import plan_history
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._event_loop import AGENT_LOOP
from agent_host._records import record_to_message

AGENT = "assistant"
CONVERSATION = "c1"
SESSION_ID = f"{AGENT}.{CONVERSATION}"  # the stable core session id the host passes (failure 11)
TURNS = [
    "My name is Ada.",
    "call get_weather city=Paris",
    "I live in Lyon.",
    "call get_time city=Tokyo, get_weather city=Kyoto, get_time city=Osaka",
    "My favourite color is teal.",
    "call get_weather city=Oslo",
    "What is my name?",
    "call get_time city=Lima",
    "Where do I live?",
    "Thanks, that is all.",
]
# Core gives every function call content a random `af-call-<uuid>` id: two runs of core differ there too.
_CALL_CONTENT_ID = re.compile(r"af-call-[0-9a-f]{32}")
# Core's compaction names unnamed messages `msg_{n}`; the host names what it stores the same way.
_CORE_NAME = re.compile(r"msg_\d+")
_NAME_REFERENCE = re.compile(r"(?<![\w.])((?:group_|tool_summary_)*)(msg_\d+)(?![\w.])")


@dataclass
class World:
    """What outlives any process of either side: what the models received, the service, files on disk."""

    directory: Path
    model: CallLog = field(default_factory=CallLog)
    summarizer: CallLog = field(default_factory=CallLog)
    service: ServiceConversations = field(default_factory=ServiceConversations)

    def model_client(self) -> RecordingChatClient:
        return RecordingChatClient(self.model)

    def summarizer_client(self) -> RecordingChatClient:
        return RecordingChatClient(self.summarizer, summarizer=True)


BuildAgent = Callable[[World], Agent]
Strategy = Callable[[World], Any]


@dataclass
class Outcome:
    """What one side of the comparison produced."""

    world: World
    texts: list[str]
    transcript: list[Message]
    loaded_next: list[Message]
    state: dict[str, Any] | None = None


def run_in_process(build: BuildAgent, directory: Path) -> Outcome:
    """Side (a): core as a user runs it, one agent and one session in memory for the whole conversation."""
    world = World(directory)
    agent = build(world)
    session = agent.create_session(session_id=SESSION_ID)
    texts = []
    for number, text in enumerate(TURNS):
        # The host names a turn's input `{turnId}.in`; the in-process user sends the very same message.
        response = AGENT_LOOP.run(agent.run(Message("user", [text], message_id=f"t{number}.in"), session=session))
        texts.append(response.text)
    history = next((p for p in agent.context_providers if isinstance(p, InMemoryHistoryProvider)), None)
    if history is None:
        return Outcome(world, texts, [], [])
    state = session.state.get(history.source_id, {})
    loaded = AGENT_LOOP.run(history.get_messages(session.session_id, state=state))
    return Outcome(world, texts, list(state.get("messages", [])), loaded)


def run_under_host(build: BuildAgent, directory: Path, *, cold: bool = True) -> Outcome:
    """Side (b): every turn through the entity's JSON batches, with new objects and only the stored string."""
    world = World(directory)
    stored: str | None = None
    texts = []
    CONVERSATION_CACHE.clear()
    for number, text in enumerate(TURNS):
        if cold:
            CONVERSATION_CACHE.clear()  # as a fresh process starts: nothing decoded survives
        driver = driver_for(build_app(build(world)), AGENT, key=CONVERSATION, state=stored)
        record = driver.run_turn(f"t{number}", text)
        assert record["status"] == "completed", record
        texts.append(record["text"])
        stored = driver.state
    assert stored is not None
    state = json.loads(stored)
    transcript = [record_to_message(record, state["agent"]) for record in state["messages"]]
    durable = plan_history(build(world)).durable
    loaded = AGENT_LOOP.run(durable.get_messages(SESSION_ID, state={"messages": transcript})) if durable else []
    return Outcome(world, texts, transcript, loaded, state)


def run_both(build: BuildAgent, tmp_path: Path) -> tuple[Outcome, Outcome]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return run_in_process(build, tmp_path / "a"), run_under_host(build, tmp_path / "b")


def model_inputs(log: CallLog) -> list[dict[str, Any]]:
    """Every call's input, with core's random function-call content ids blanked."""
    return [json.loads(_CALL_CONTENT_ID.sub("<af-call>", json.dumps(call.__dict__))) for call in log.calls]


def comparable(
    core: list[Message], host: list[Message], *, rename_core_names: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both histories as dicts, equal exactly when they hold the same messages with the same annotations.

    Core leaves a message unnamed until compaction first groups it; the host names every message it stores (the
    way core would), so a core message without an id matches a host message named `msg_{n}` at the same place.
    With `rename_core_names`, every `msg_{n}` name on both sides (and every reference to it) becomes its position.
    """
    assert len(core) == len(host), f"core keeps {len(core)} messages, the host {len(host)}"
    core_names: dict[str, str] = {}
    host_names: dict[str, str] = {}
    core_dicts, host_dicts = [], []
    for position, (ours, theirs) in enumerate(zip(core, host, strict=True)):
        core_dict, host_dict = ours.to_dict(), theirs.to_dict()
        placeholder = f"<message {position}>"
        if ours.message_id is None and theirs.message_id is not None:
            assert _CORE_NAME.fullmatch(theirs.message_id), theirs.message_id
            core_dict["message_id"] = placeholder
            host_names[theirs.message_id] = placeholder
        elif rename_core_names and _CORE_NAME.fullmatch(ours.message_id):
            core_names[ours.message_id] = placeholder
            if theirs.message_id and _CORE_NAME.fullmatch(theirs.message_id):
                host_names[theirs.message_id] = placeholder
        core_dicts.append(core_dict)
        host_dicts.append(host_dict)
    return _renamed(core_dicts, core_names), _renamed(host_dicts, host_names)


def _renamed(messages: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    text = _CALL_CONTENT_ID.sub("<af-call>", json.dumps(messages))
    text = _NAME_REFERENCE.sub(lambda match: match.group(1) + names.get(match.group(2), match.group(2)), text)
    return json.loads(text)


def assert_parity(core: Outcome, host: Outcome, *, rename_core_names: bool = False) -> None:
    """Same model input on every call, same answers, same stored history, same history loaded next."""
    assert len(core.world.model.calls) == len(host.world.model.calls) >= len(TURNS)
    calls = zip(model_inputs(core.world.model), model_inputs(host.world.model), strict=True)
    for number, (ours, theirs) in enumerate(calls):
        assert ours == theirs, f"model call {number} differs"
    assert model_inputs(core.world.summarizer) == model_inputs(host.world.summarizer)
    assert core.texts == host.texts
    ours, theirs = comparable(core.transcript, host.transcript, rename_core_names=rename_core_names)
    assert ours == theirs
    ours, theirs = comparable(core.loaded_next, host.loaded_next, rename_core_names=rename_core_names)
    assert ours == theirs


def excluded(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.additional_properties.get("_excluded")]


def summaries(messages: list[Message]) -> list[Message]:
    return [m for m in messages if "_summary_of_message_ids" in m.additional_properties.get("_group", {})]


def plain_agent(world: World, **kwargs: Any) -> Agent:
    return Agent(world.model_client(), "Be brief.", name=AGENT, tools=[get_weather, get_time], **kwargs)


def with_compaction(*, before: Strategy | None = None, after: Strategy | None = None) -> BuildAgent:
    """An agent with `InMemoryHistoryProvider(skip_excluded=True)` and a `CompactionProvider`, the core way."""

    def build(world: World) -> Agent:
        history = InMemoryHistoryProvider(skip_excluded=True)
        compaction = CompactionProvider(
            before_strategy=before(world) if before else None,
            after_strategy=after(world) if after else None,
            history_source_id=history.source_id,
        )
        return plain_agent(world, context_providers=[history, compaction])

    return build


STRATEGIES: dict[str, Strategy] = {
    "sliding_window": lambda world: SlidingWindowStrategy(keep_last_groups=4),
    "tool_result": lambda world: ToolResultCompactionStrategy(keep_last_tool_call_groups=1),
    "selective_tool_call": lambda world: SelectiveToolCallCompactionStrategy(keep_last_tool_call_groups=1),
    "truncation": lambda world: TruncationStrategy(max_n=8, compact_to=5),
    "summarization": lambda world: SummarizationStrategy(client=world.summarizer_client(), target_count=4, threshold=2),
    "token_budget_composed": lambda world: TokenBudgetComposedStrategy(
        token_budget=300,
        tokenizer=CharacterEstimatorTokenizer(),
        strategies=[
            ToolResultCompactionStrategy(keep_last_tool_call_groups=1),
            SlidingWindowStrategy(keep_last_groups=4),
        ],
    ),
}


def test_agent_without_context_providers_matches_core(tmp_path: Path) -> None:
    core, host = run_both(lambda world: plain_agent(world), tmp_path)

    assert_parity(core, host)
    assert len(host.transcript) > 2 * len(TURNS)  # tool calls and results are stored too
    assert "(I saw 31 messages)" in host.texts[-1]  # the last call still saw the whole conversation


def test_in_memory_history_provider_is_replaced_durably_and_matches_core(tmp_path: Path) -> None:
    core, host = run_both(lambda world: plain_agent(world, context_providers=[InMemoryHistoryProvider()]), tmp_path)

    assert_parity(core, host)
    assert [m.text for m in host.transcript if m.role == "user"] == TURNS


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_compaction_provider_after_strategy_matches_core(strategy: str, tmp_path: Path) -> None:
    core, host = run_both(with_compaction(after=STRATEGIES[strategy]), tmp_path)

    assert_parity(core, host)
    assert excluded(host.transcript), "compaction excluded nothing: the comparison would prove nothing"
    assert len(host.loaded_next) < len(host.transcript)
    if strategy in ("tool_result", "summarization", "token_budget_composed"):
        assert summaries(host.transcript)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_compaction_provider_before_strategy_matches_core(strategy: str, tmp_path: Path) -> None:
    core, host = run_both(with_compaction(before=STRATEGIES[strategy]), tmp_path)

    assert_parity(core, host)
    # A before_strategy compacts what the model is sent, never what is stored.
    assert len(host.world.model.calls[-1].messages) < len(host.transcript)
    assert not excluded(host.transcript) and not summaries(host.transcript)


def test_summarizing_before_strategy_differs_only_by_the_links_core_leaks_into_stored_history(
    tmp_path: Path,
) -> None:
    # Why they differ: core's loaded copies share `_group` dicts with stored messages, so its before_strategy writes
    # token counts and back-links to summaries it never stores into history; the host copies deeply on load.
    build = with_compaction(before=STRATEGIES["summarization"], after=STRATEGIES["selective_tool_call"])

    core, host = run_both(build, tmp_path)

    assert model_inputs(core.world.model) == model_inputs(host.world.model)
    assert model_inputs(core.world.summarizer) == model_inputs(host.world.summarizer)
    assert dangling_summary_links(core.transcript), "core no longer leaks: the host can match it exactly"
    assert not dangling_summary_links(host.transcript)
    ours, theirs = comparable(core.transcript, host.transcript)
    assert [without_leaks(m) for m in ours] == [without_leaks(m) for m in theirs]


def dangling_summary_links(messages: list[Message]) -> list[str]:
    names = {m.message_id for m in messages}
    links = [m.additional_properties.get("_group", {}).get("_summarized_by_summary_id") for m in messages]
    return [link for link in links if link and link not in names]


def without_leaks(message: dict[str, Any]) -> dict[str, Any]:
    group = dict(message["additional_properties"].get("_group") or {})
    for key in ("_summarized_by_summary_id", "token_count", "token_count_basis"):
        group.pop(key, None)
    return {**message, "additional_properties": {**message["additional_properties"], "_group": group}}


def test_call_level_sliding_window_with_tools_matches_core(tmp_path: Path) -> None:
    core, host = run_both(
        lambda world: plain_agent(world, compaction_strategy=SlidingWindowStrategy(keep_last_groups=3)), tmp_path
    )

    assert_parity(core, host)
    assert max(len(call.messages) for call in host.world.model.calls) <= 6


def test_call_level_tool_result_compaction_matches_core_but_delivers_only_what_the_agent_wrote(
    tmp_path: Path,
) -> None:
    # Why they differ: core 1.23 returns call-level summaries inside the response; the host stores them in the
    # transcript like core but leaves them out of the turn's delivered answer (failure 5).
    build = lambda world: plain_agent(  # noqa: E731
        world, compaction_strategy=ToolResultCompactionStrategy(keep_last_tool_call_groups=1)
    )

    core, host = run_both(build, tmp_path)

    assert model_inputs(core.world.model) == model_inputs(host.world.model)
    ours, theirs = comparable(core.transcript, host.transcript)
    assert ours == theirs
    assert summaries(host.transcript)
    multi_tool_turn = 3
    assert core.texts[multi_tool_turn].startswith(TOOL_RESULTS_PREFIX)
    summary_texts = "".join(m.text for m in summaries(host.transcript))
    assert core.texts[multi_tool_turn] == summary_texts + host.texts[multi_tool_turn]
    assert TOOL_RESULTS_PREFIX not in host.texts[multi_tool_turn]
    assert [t for n, t in enumerate(core.texts) if n != multi_tool_turn] == [
        t for n, t in enumerate(host.texts) if n != multi_tool_turn
    ]


def test_call_level_summarization_matches_core_up_to_names_given_mid_call(tmp_path: Path) -> None:
    # Why names can differ: call-level compaction names unnamed messages by their place in each model call; core's
    # unnamed history copies take names there, the host's carry their stored names, so a new one may get another.
    build = lambda world: plain_agent(  # noqa: E731
        world, compaction_strategy=SummarizationStrategy(client=world.summarizer_client(), target_count=3, threshold=1)
    )

    core, host = run_both(build, tmp_path)

    assert_parity(core, host, rename_core_names=True)
    assert host.world.summarizer.calls, "the call-level summarizer never ran"


def test_external_history_provider_is_left_alone_and_keeps_the_conversation_under_one_key(tmp_path: Path) -> None:
    core, host = run_both(
        lambda world: plain_agent(world, context_providers=[SqliteHistoryProvider(world.directory / "history.db")]),
        tmp_path,
    )

    assert_parity(core, host)
    core_rows = SqliteHistoryProvider(tmp_path / "a" / "history.db").stored()
    host_rows = SqliteHistoryProvider(tmp_path / "b" / "history.db").stored()
    assert list(host_rows) == [SESSION_ID]
    assert [m["contents"][0].get("text") for m in host_rows[SESSION_ID] if m["role"] == "user"] == TURNS
    ours, theirs = comparable(
        [Message.from_dict(m) for m in core_rows[SESSION_ID]], [Message.from_dict(m) for m in host_rows[SESSION_ID]]
    )
    assert ours == theirs
    assert host.state is not None and host.state["messages"] == []  # the host stores none of it


def test_two_agents_sharing_a_conversation_id_keep_separate_keys_in_an_external_store(tmp_path: Path) -> None:
    log = CallLog()
    database = tmp_path / "history.db"

    def app() -> Any:
        return build_app(
            *(
                Agent(
                    RecordingChatClient(log),
                    "Be brief.",
                    name=name,
                    context_providers=[SqliteHistoryProvider(database)],
                )
                for name in ("support", "sales")
            )
        )

    for name in ("support", "sales"):
        driver_for(app(), name, key="shared").run_turn("t1", f"My name is {name}.")

    rows = SqliteHistoryProvider(database).stored()
    assert sorted(rows) == ["sales.shared", "support.shared"]
    assert rows["support.shared"][0]["contents"][0]["text"] == "My name is support."


def test_service_stored_history_is_not_replayed_and_its_conversation_id_survives_cold_starts(tmp_path: Path) -> None:
    build = lambda world: Agent(  # noqa: E731
        ServiceStoringChatClient(world.model, world.service), "Be brief.", name=AGENT, tools=[get_weather, get_time]
    )

    core, host = run_both(build, tmp_path)

    assert_parity(core, host)
    assert host.state is not None and host.state["messages"] == []
    assert host.state["session"]["service_session_id"] == "svc-1"
    assert {call.conversation_id for call in host.world.model.calls[1:]} == {"svc-1"}
    assert [len(call.messages) for call in host.world.model.calls[:2]] == [1, 1]  # only the new input is sent
    ours, theirs = comparable(core.world.service.conversations["svc-1"], host.world.service.conversations["svc-1"])
    assert ours == theirs


def test_store_false_on_a_client_that_stores_by_default_keeps_history_in_the_entity(tmp_path: Path) -> None:
    build = lambda world: Agent(  # noqa: E731
        ServiceStoringChatClient(world.model, world.service),
        "Be brief.",
        name=AGENT,
        tools=[get_weather, get_time],
        default_options={"store": False},
    )

    core, host = run_both(build, tmp_path)

    assert_parity(core, host)
    assert host.world.service.conversations == {} == core.world.service.conversations
    assert {call.store for call in host.world.model.calls} == {False}
    assert [m.text for m in host.transcript if m.role == "user"] == TURNS
    assert "(I saw 31 messages)" in host.texts[-1]


@pytest.mark.parametrize("strategy", ["tool_result", "summarization"])
def test_a_warm_worker_stores_what_a_cold_start_stores(strategy: str, tmp_path: Path) -> None:
    (tmp_path / "cold").mkdir()
    (tmp_path / "warm").mkdir()
    build = with_compaction(after=STRATEGIES[strategy])

    cold = run_under_host(build, tmp_path / "cold")
    warm = run_under_host(build, tmp_path / "warm", cold=False)

    assert model_inputs(cold.world.model) == model_inputs(warm.world.model)
    assert cold.state is not None and warm.state is not None
    stored = [[{k: v for k, v in r.items() if k != "at"} for r in s["messages"]] for s in (cold.state, warm.state)]
    assert _CALL_CONTENT_ID.sub("<af-call>", json.dumps(stored[0])) == _CALL_CONTENT_ID.sub(
        "<af-call>", json.dumps(stored[1])
    )


def test_the_host_names_delivered_messages_without_renaming_what_an_external_provider_keeps() -> None:
    own = ListHistoryProvider()
    agent = Agent(RecordingChatClient(CallLog()), "Be brief.", name=AGENT, context_providers=[own])

    record = driver_for(build_app(agent), AGENT).run_turn("t0", "My name is Ada.")

    (kept,) = own.sessions.values()
    assert [m.message_id for m in kept] == ["t0.in", None]  # as core leaves them
    assert [m["id"] for m in record["messages"]] == ["t0.0"]
    assert record["text"] == "Re: My name is Ada. (I saw 1 messages)"
