"""What retention keeps: long conversations through the entity function, the committed state measured after every turn.

`python -m bench.retention_budget` prints the figures docs/retention.md shows, as the Markdown the page holds them in;
`--write` puts them into the page. `tests/entity/test_retention_budget.py` reruns the same replays and checks that the
page holds exactly what they print, so the page cannot drift from the code.

Two kinds of conversation, every turn through the entity function with the host's JSON batch format:

- issue 13's three cases (turn receipts costed as fixed let the state grow past its budget), on the offline model
  with no compaction: per case the largest stored state, the share of it that was turn receipts, and what retention
  deleted;
- the template's own agent (function_app.py: a summarizing compaction, `skip_excluded=True`) over 110 turns at a
  30,000-byte budget and at the default, where eviction used to delete compaction's summaries and keep the messages
  they stood for (issue 26): per turn how many stored messages are excluded by a summary that is no longer stored,
  and how many the model was sent neither directly nor through a summary; at the end, a question about the first
  turn's fact, whose message retention deleted long before.

Times come from a fixed clock, so every figure is the same on every run and machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from agent_framework import (
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
    Agent,
    CompactionProvider,
    InMemoryHistoryProvider,
    Message,
    SummarizationStrategy,
    tool,
)

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient, RetentionSettings
from agent_host._clock import Clock
from agent_host._conversation.state import EXPIRED_TURNS_KEY, MESSAGES_KEY, TURNS_KEY, encode_state
from agent_host._conversation.turn_receipts import answer_messages, turn_text

from .workload import entity_batch

ENTITY = "conversation_assistant"
DOC = Path(__file__).resolve().parents[1] / "docs" / "retention.md"
BEGIN_MARK = (
    "<!-- figures: python -m bench.retention_budget --write (checked by tests/entity/test_retention_budget.py) -->"
)
END_MARK = "<!-- end of figures -->"
# The template's compaction (function_app.py); tests/entity/test_retention_budget.py checks the template still has it.
TEMPLATE_TARGET_COUNT = 8
TEMPLATE_THRESHOLD = 6
TEMPLATE_INSTRUCTIONS = "You are a friendly assistant. Remember what the user tells you. Use tools when asked."
# 2023-11-14T22:13:20Z, one millisecond more on every reading: the figures never depend on today's date.
_START_MS = 1_700_000_000_000
_WORDS = "the durable entity keeps each conversation within the budget it was given while turns keep coming "
_TOOL_EVERY = 10
# The turns whose sizes the page shows.
SIZE_TURNS = (10, 20, 30, 40, 60, 100, 150)


@tool
def get_weather(city: Annotated[str, "The city to get the weather for."]) -> str:
    """Get today's weather for a city (the template's canned sample)."""
    return f"The weather in {city} is mild and dry, 18 °C."


@dataclass(frozen=True)
class BudgetCase:
    """A conversation to replay: how many turns of how many characters, under which retention, with which agent.

    `agent` is "echo" (the offline model, no compaction) or "template" (the template's agent and compaction).
    """

    name: str
    turns: int
    message_chars: int
    retention: RetentionSettings
    max_turn_records: int = 100
    agent: Literal["echo", "template"] = "echo"


@dataclass
class TurnSizes:
    """The stored state right after one committed turn, and what the model was sent in the next one.

    `orphaned` counts stored messages excluded by a summary that is not stored (or that is itself orphaned);
    `mislinked` those linked to a stored summary that does not name them among the messages it stands for; `unseen`
    the stored messages the next turn's first model call was sent neither directly nor through a summary standing
    for them (None after the last turn); `newest_kept` says whether the turn's own message and answer are stored.
    """

    turn: int
    state_bytes: int
    transcript_bytes: int
    receipt_bytes: int
    messages: int
    receipts: int
    excluded: int = 0
    summaries: int = 0
    orphaned: int = 0
    mislinked: int = 0
    unseen: int | None = None
    newest_kept: bool = True


@dataclass
class BudgetRun:
    """One case replayed: the sizes after every turn, what retention did, the stored messages at the end, and
    (template cases) the closing question and its answer."""

    case: BudgetCase
    sizes: list[TurnSizes] = field(default_factory=list)
    evicted_messages: int = 0
    expired_answers: int = 0
    capacity_error: dict[str, str] | None = None
    first_message_evicted_at: int | None = None
    recall_question: str | None = None
    recall_answer: str | None = None
    final_records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def largest(self) -> TurnSizes:
        return max(self.sizes, key=lambda size: size.state_bytes)

    def summary(self) -> dict[str, Any]:
        largest = self.largest
        return {
            "case": self.case.name,
            "budget": self.case.retention.max_state_bytes,
            "largestState": largest.state_bytes,
            "atTurn": largest.turn,
            "receiptShareAtLargest": round(largest.receipt_bytes / largest.state_bytes, 3),
            "messagesAtEnd": self.sizes[-1].messages,
            "receiptsAtEnd": self.sizes[-1].receipts,
            "evictedMessages": self.evicted_messages,
            "expiredAnswers": self.expired_answers,
            "capacityError": self.capacity_error,
        }


CASES = (
    BudgetCase("30,000-byte budget, 40 turns of ~500 characters", 40, 500, RetentionSettings(max_state_bytes=30_000)),
    BudgetCase("64 KiB budget, 60 turns of ~3,000 characters", 60, 3_000, RetentionSettings(max_state_bytes=65_536)),
    BudgetCase("default settings, 150 turns of 12,000 characters", 150, 12_000, RetentionSettings()),
)
TEMPLATE_CASES = (
    BudgetCase(
        "the template's agent, 30,000-byte budget, 110 turns of 400 characters",
        110,
        400,
        RetentionSettings(max_state_bytes=30_000),
        agent="template",
    ),
    BudgetCase(
        "the template's agent, default settings, 110 turns of 3,000 characters",
        110,
        3_000,
        RetentionSettings(),
        agent="template",
    ),
)


class RecordingOfflineClient(OfflineChatClient):
    """The offline model, keeping the ids of the messages each call was sent."""

    def __init__(self) -> None:
        super().__init__(word_delay_seconds=0)
        self.calls: list[list[str | None]] = []

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Any:
        self.calls.append([message.message_id for message in messages])
        return await super()._inner_get_response(messages=messages, stream=stream, options=options, **kwargs)


def template_agent(client: OfflineChatClient) -> Agent:
    """The template's agent (function_app.py) on `client`; its summaries are written by another offline model."""
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SummarizationStrategy(
            client=OfflineChatClient(), target_count=TEMPLATE_TARGET_COUNT, threshold=TEMPLATE_THRESHOLD
        ),
        history_source_id=history.source_id,
    )
    return Agent(
        client,
        instructions=TEMPLATE_INSTRUCTIONS,
        name="assistant",
        tools=[get_weather],
        context_providers=[history, compaction],
        default_options={"store": False},
    )


class _SteppingClock:
    def __init__(self) -> None:
        self.ms = _START_MS

    def now_ms(self) -> int:
        self.ms += 1
        return self.ms


def message(turn: int, chars: int) -> str:
    """A user message of about `chars` characters, unique per turn."""
    return _padded(f"Turn {turn}: ", chars)


def fact_message(turn: int, chars: int) -> str:
    """A template-case message: a fact the offline model remembers (`fact_name(turn)`), now and then a tool call."""
    text = f"My {fact_name(turn)} is value{turn}. "
    if turn % _TOOL_EVERY == _TOOL_EVERY // 2:
        text += "Use get_weather city=Paris. "
    return _padded(text, chars)


def fact_name(turn: int) -> str:
    """`fact a`, `fact b`, ..., `fact aa`: letters only, as the offline model's facts are named."""
    letters = ""
    while turn > 0:
        turn, rest = divmod(turn - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return f"fact {letters}"


def _padded(text: str, chars: int) -> str:
    while len(text) < chars:
        text += _WORDS
    return text[:chars]


CommitTurn = Callable[[str, str], str]
"""Runs one turn (its id, its message) of the conversation and returns the committed state's text.

Raises `RuntimeError` when the entity operation itself failed (a turn the entity refused is a committed record)."""

TurnHost = Callable[[Agent, HostSettings, Clock], AbstractContextManager[CommitTurn]]
"""Hosts the agent's conversation entity, with these settings and clock, for the turns of one replay."""


@contextmanager
def entity_function_turns(agent: Agent, settings: HostSettings, clock: Clock) -> Iterator[CommitTurn]:
    """The turns through the function app's entity function, one host JSON batch each, the state carried along."""
    app = AgentFunctionApp([agent], settings=settings, clock=clock)
    (function,) = [f.get_user_function() for f in app.get_functions() if f.get_function_name() == ENTITY]
    state: str | None = None

    def commit(turn_id: str, text: str) -> str:
        nonlocal state
        operation = ("run", {"turnId": turn_id, "message": text})
        output = json.loads(function(entity_batch(ENTITY, "budget", state, [operation])))
        if output["results"][0]["isError"]:
            raise RuntimeError(output["results"][0]["result"])
        state = output["entityState"]
        return state

    yield commit


def replay(case: BudgetCase, host: TurnHost = entity_function_turns) -> BudgetRun:
    """Run every turn of `case` through the conversation entity `host` hosts (the function app's entity function by
    default) and measure the committed state after each."""
    settings = HostSettings(retention=case.retention, max_turn_records=case.max_turn_records)
    client = RecordingOfflineClient()
    agent = (
        template_agent(client)
        if case.agent == "template"
        else Agent(client, "You answer every message.", name="assistant")
    )
    with host(agent, settings, _SteppingClock()) as commit:
        return _replay(case, client, commit)


def _replay(case: BudgetCase, client: RecordingOfflineClient, commit: CommitTurn) -> BudgetRun:
    """Commit the turns of `case` one by one, `client` answering, and measure the state after each."""
    run = BudgetRun(case)
    records: list[dict[str, Any]] = []
    first_id = f"{_turn_id(1)}.in"
    texts = [
        (fact_message if case.agent == "template" else message)(turn, case.message_chars)
        for turn in range(1, case.turns + 1)
    ]
    if case.agent == "template":
        run.recall_question = f"What is my {fact_name(1)}?"
        texts.append(run.recall_question)
    for turn, text in enumerate(texts, start=1):
        calls = len(client.calls)
        try:
            state = commit(_turn_id(turn), text)
        except RuntimeError as exc:
            raise RuntimeError(f"turn {turn} of {case.name!r} failed: {exc}") from None
        if run.sizes:
            run.sizes[-1].unseen = len(unseen(records, client.calls[calls]))
        decoded = json.loads(state)
        records = run.final_records = decoded[MESSAGES_KEY]
        if turn > case.turns:
            run.recall_answer = turn_text(answer_messages(decoded, decoded[TURNS_KEY][_turn_id(turn)]))
            break
        if run.first_message_evicted_at is None and all(record["id"] != first_id for record in records):
            run.first_message_evicted_at = turn
        receipts = {TURNS_KEY: decoded.get(TURNS_KEY, {}), EXPIRED_TURNS_KEY: decoded.get(EXPIRED_TURNS_KEY, [])}
        run.sizes.append(
            TurnSizes(
                turn=turn,
                state_bytes=len(state.encode("utf-8")),
                transcript_bytes=len(encode_state(records).encode("utf-8")),
                receipt_bytes=len(encode_state(receipts).encode("utf-8")),
                messages=len(records),
                receipts=len(receipts[TURNS_KEY]),
                excluded=sum(1 for record in records if _props(record).get(EXCLUDED_KEY)),
                summaries=sum(1 for record in records if SUMMARY_OF_MESSAGE_IDS_KEY in _group(record)),
                orphaned=len(orphaned(records)),
                mislinked=len(mislinked(records)),
                newest_kept=_answered(decoded, _turn_id(turn)),
            )
        )
        run.evicted_messages = decoded["truncation"].get("evictedMessages", 0)
        run.expired_answers = decoded["truncation"].get("expiredAnswers", 0)
        run.capacity_error = decoded.get("capacityError")
    return run


def _answered(state: dict[str, Any], turn_id: str) -> bool:
    """Whether the turn's message and the messages its receipt names are all stored."""
    stored = {record["id"] for record in state[MESSAGES_KEY]}
    named = [name for name in state[TURNS_KEY][turn_id]["messages"] if isinstance(name, str)]
    return f"{turn_id}.in" in stored and bool(named) and stored.issuperset(named)


def _turn_id(turn: int) -> str:
    return f"{turn:011x}00000000"


def orphaned(records: Sequence[dict[str, Any]]) -> list[str]:
    """Ids of the stored messages excluded by a summary that is not stored, directly or through the summaries that
    stand for that summary."""
    by_id = {record["id"]: record for record in records}
    lost = []
    for record in records:
        if not _props(record).get(EXCLUDED_KEY) or _link(record) is None:
            continue
        chain = _summary_chain(record, by_id)
        if not chain or chain[-1] not in by_id:
            lost.append(record["id"])
    return lost


def mislinked(records: Sequence[dict[str, Any]]) -> list[str]:
    """Ids of the stored messages linked to a stored summary that does not name them among what it stands for."""
    by_id = {record["id"]: record for record in records}
    return [
        record["id"]
        for record in records
        if (link := _link(record)) in by_id
        and record["id"] not in _group(by_id[link]).get(SUMMARY_OF_MESSAGE_IDS_KEY, ())
    ]


def unseen(records: Sequence[dict[str, Any]], sent: Sequence[str | None]) -> list[str]:
    """Ids of the stored messages a model call was sent neither directly nor through a summary standing for them."""
    by_id = {record["id"]: record for record in records}
    seen = set(sent)
    return [
        record["id"]
        for record in records
        if record["id"] not in seen and not seen.intersection(_summary_chain(record, by_id))
    ]


def _summary_chain(record: dict[str, Any], by_id: Mapping[str, dict[str, Any]]) -> list[str]:
    """The ids of the summary standing for `record`, the one standing for that summary, and so on."""
    chain: list[str] = []
    link = _link(record)
    while link is not None and link not in chain:
        chain.append(link)
        link = _link(by_id[link]) if link in by_id else None
    return chain


def _props(record: Mapping[str, Any]) -> dict[str, Any]:
    return record.get("props") or {}


def _group(record: Mapping[str, Any]) -> dict[str, Any]:
    group = _props(record).get(GROUP_ANNOTATION_KEY)
    return group if isinstance(group, dict) else {}


def _link(record: Mapping[str, Any]) -> str | None:
    link = _group(record).get(SUMMARIZED_BY_SUMMARY_ID_KEY)
    return link if isinstance(link, str) else None


def markdown(budget_runs: Sequence[BudgetRun], template_runs: Sequence[BudgetRun]) -> str:
    """The figures as docs/retention.md holds them, between its figure marks."""
    lines = [
        "| Case | Budget | Largest state (turn) | Receipts at that point | Messages / receipts at the end "
        "| Evicted messages | Expired answers |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in budget_runs:
        largest, last = run.largest, run.sizes[-1]
        lines.append(
            f"| {run.case.name} | {run.case.retention.max_state_bytes:,} | {largest.state_bytes:,} ({largest.turn}) "
            f"| {largest.receipt_bytes / largest.state_bytes:.1%} | {last.messages} / {last.receipts} "
            f"| {run.evicted_messages} | {run.expired_answers} |"
        )
    lines += [
        "",
        f"Sizes after turns {', '.join(map(str, SIZE_TURNS[:-1]))} and {SIZE_TURNS[-1]} "
        "(bytes: whole state / transcript / receipts):",
        "",
        "| Turn | " + " | ".join(f"{run.case.retention.max_state_bytes:,} budget" for run in budget_runs) + " |",
        "|---|" + "---|" * len(budget_runs),
    ]
    for turn in SIZE_TURNS:
        cells = []
        for run in budget_runs:
            sizes = run.sizes[turn - 1] if turn <= len(run.sizes) else None
            cells.append(
                f"{sizes.state_bytes:,} / {sizes.transcript_bytes:,} / {sizes.receipt_bytes:,}" if sizes else ""
            )
        lines.append(f"| {turn} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The template's agent (summaries of the oldest messages, `skip_excluded=True`), a tool call every tenth turn:",
        "",
        "| Case | Largest state (turn) | Evicted messages | At the end: messages / excluded / summaries "
        "| Orphaned exclusions, most after any turn | Stored messages the model was sent neither directly nor "
        "through a summary, most in any turn | Turn 1's message evicted at turn | Asked at the end "
        "| The model answered |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in template_runs:
        largest, last = run.largest, run.sizes[-1]
        unseen_counts = [sizes.unseen for sizes in run.sizes if sizes.unseen is not None]
        lines.append(
            f"| {run.case.name} | {largest.state_bytes:,} ({largest.turn}) | {run.evicted_messages} "
            f"| {last.messages} / {last.excluded} / {last.summaries} "
            f"| {max(sizes.orphaned for sizes in run.sizes)} | {max(unseen_counts)} "
            f"| {run.first_message_evicted_at} | {run.recall_question} | {run.recall_answer} |"
        )
    return "\n".join(lines) + "\n"


def page_figures(page: str) -> str:
    """The figures a page holds between its marks."""
    match = re.search(re.escape(BEGIN_MARK) + r"\n(.*?)" + re.escape(END_MARK), page, re.DOTALL)
    if match is None:
        raise LookupError(f"{DOC.name} has no figure marks ({BEGIN_MARK!r} ... {END_MARK!r})")
    return match.group(1)


def with_figures(page: str, figures: str) -> str:
    """The page with `figures` between its marks."""
    start = page.index(BEGIN_MARK) + len(BEGIN_MARK) + 1
    return page[:start] + figures + page[page.index(END_MARK, start) :]


def main(argv: list[str] | None = None) -> int:
    """Replay every case and print the figures, or write them into docs/retention.md."""
    parser = argparse.ArgumentParser(prog="python -m bench.retention_budget", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"put the figures into {DOC.relative_to(DOC.parents[1])}")
    args = parser.parse_args(argv)
    figures = markdown([replay(case) for case in CASES], [replay(case) for case in TEMPLATE_CASES])
    if args.write:
        DOC.write_text(with_figures(DOC.read_text(encoding="utf-8"), figures), encoding="utf-8")
    else:
        sys.stdout.write(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
