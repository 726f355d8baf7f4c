"""Our host's per-turn cost: grow a conversation through the entity function, then time one more turn.

Everything goes through the entity function with the host's JSON batch format, as the Functions host calls it.
A turn is timed cold (the process has never seen the state string: caches cleared) and warm (the state string is
the one this process wrote last, the usual case for a worker that keeps a conversation), beside the JSON floor of
the same state string and core's own `agent.run` over the same messages, handed ready or restored from the JSON
core itself persists a session as.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from agent_framework import Agent, AgentSession, InMemoryHistoryProvider, SessionContext
from agent_framework._tools import _copy_messages_for_function_invocation

from agent_host import AgentFunctionApp, HostSettings, RetentionSettings
from agent_host._conversation.state import encode_state
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._event_loop import AgentEventLoop
from agent_host._records import record_to_message

from .published import PublishedHost
from .workload import (
    AGENT_INSTRUCTIONS,
    AGENT_NAME,
    ZeroLatencyChatClient,
    cpu_ms,
    entity_batch,
    interleaved_medians,
    user_message,
)

ENTITY_NAME = f"conversation_{AGENT_NAME}"
KEY = "bench-conversation"
_CORE_LOOP = AgentEventLoop()
# Large enough that retention never deletes while section 1 grows its conversation.
UNBOUNDED_BYTES = 256 * 1024 * 1024


def turn_id(turn: int) -> str:
    """A turn id shaped like `new_turn_id()` (11 hex digits of milliseconds, 8 more), deterministic per turn."""
    return f"{0x19000000000 + turn:011x}{turn:08x}"


@dataclass
class Snapshot:
    """A conversation after `turns` turns: its state string and the one before its last turn."""

    turns: int
    state: str
    previous: str | None

    @property
    def messages(self) -> int:
        return len(json.loads(self.state)["messages"])

    @property
    def state_bytes(self) -> int:
        return len(self.state.encode("utf-8"))

    @property
    def transcript_bytes(self) -> int:
        """The stored bytes of the messages array alone (what grows with the conversation)."""
        return len(encode_state(json.loads(self.state)["messages"]).encode("utf-8"))


@dataclass
class TurnCost:
    """The median CPU cost of one more turn from a snapshot, and what it is compared with."""

    turns: int
    messages: int
    state_bytes: int
    transcript_bytes: int
    floor_ms: float
    cold_ms: float
    warm_ms: float
    core_ms: float | None = None
    core_restored_ms: float | None = None
    core_copies_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class EntityBench:
    """Our app with the zero-latency agent, its entity function, and one conversation grown turn by turn.

    Args:
        settings: The host settings (retention defaults, turn records) the conversation is created with.
    """

    def __init__(self, settings: HostSettings) -> None:
        self.client = ZeroLatencyChatClient()
        self.agent = Agent(self.client, AGENT_INSTRUCTIONS, name=AGENT_NAME)
        app = AgentFunctionApp(agents=[self.agent], settings=settings)
        self.function: Callable[[str], str] = next(
            f for f in app.get_functions() if f.get_function_name() == ENTITY_NAME
        ).get_user_function()
        self.state: str | None = None
        self.turns = 0

    def run(self, state: str | None, turn: int) -> str:
        """Run turn `turn` on `state` through the entity function; the new state string."""
        return checked(self.function(self.batch(state, turn)))

    def timed_run(self, state: str | None, turn: int) -> tuple[float, str]:
        """Run turn `turn` on `state`; the CPU time of the entity function alone (no collection first) and the
        new state string. Without a collection before each turn, a run of them pays its collector's work as a
        worker does."""
        batch = self.batch(state, turn)
        outputs: list[str] = []
        elapsed = cpu_ms(lambda: outputs.append(self.function(batch)), collect=False)
        return elapsed, checked(outputs[0])

    def grow_to(self, turns: int) -> Snapshot:
        """Run turns until the conversation has had `turns`."""
        previous = self.state
        while self.turns < turns:
            previous = self.state
            self.turns += 1
            self.state = self.run(self.state, self.turns)
        assert self.state is not None
        return Snapshot(self.turns, self.state, previous)

    def grow_to_messages(self, messages: int) -> Snapshot:
        """Run turns until the conversation stores at least `messages` messages (two per turn)."""
        snapshot = self.grow_to(max(1, (messages + 1) // 2))
        while snapshot.messages < messages:
            snapshot = self.grow_to(self.turns + 1)
        return snapshot

    def time_next_turn(
        self, snapshot: Snapshot, repeats: int, *, with_core: bool = True, published: PublishedHost | None = None
    ) -> TurnCost:
        """Time turn `snapshot.turns + 1` cold and warm, beside the floor and core's own run, interleaved.

        With `published` (its conversation grown to the same size), its turn and its floor join the rounds.
        """
        next_turn = snapshot.turns + 1
        cold_batch = self.batch(snapshot.state, next_turn)
        warm: dict[str, str] = {}

        def prepare_cold() -> None:
            CONVERSATION_CACHE.clear()

        def prepare_warm() -> None:
            # Replay the snapshot's last turn in this process, so the state handed in is the string it wrote.
            CONVERSATION_CACHE.clear()
            written = self.run(snapshot.previous, snapshot.turns)
            warm["batch"] = self.batch(written, next_turn)

        outputs: list[str] = []  # checked after timing, so the check is not timed
        cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {
            "floor": (lambda: json.dumps(json.loads(snapshot.state)), None),
            "cold": (lambda: outputs.append(self.function(cold_batch)), prepare_cold),
            "warm": (lambda: outputs.append(self.function(warm["batch"])), prepare_warm),
        }
        if with_core:
            cases["core"] = _core_run(snapshot.state, next_turn)
            cases["core_restored"] = (_core_restored_run(snapshot.state, next_turn), None)
            cases["core_copies"] = _core_copies(snapshot.state)
        elsewhere = {"published": published.turn_ms, "published_floor": published.floor_ms} if published else {}
        medians = interleaved_medians(cases, repeats, elsewhere)
        CONVERSATION_CACHE.clear()
        for output in outputs:
            checked(output)
        return TurnCost(
            turns=snapshot.turns,
            messages=snapshot.messages,
            state_bytes=snapshot.state_bytes,
            transcript_bytes=snapshot.transcript_bytes,
            floor_ms=medians["floor"],
            cold_ms=medians["cold"],
            warm_ms=medians["warm"],
            core_ms=medians.get("core"),
            core_restored_ms=medians.get("core_restored"),
            core_copies_ms=medians.get("core_copies"),
            extra={"published": {"turn_ms": medians["published"], "floor_ms": medians["published_floor"]}}
            if published
            else {},
        )

    def batch(self, state: str | None, turn: int) -> str:
        """The host's batch running turn `turn` on `state`."""
        request = {"turnId": turn_id(turn), "message": user_message(turn)}
        return entity_batch(ENTITY_NAME, KEY, state, [("run", request)])


def _core_agent() -> Agent:
    """The bench's agent as core alone runs it: the same client and instructions, history in core's own provider."""
    return Agent(
        ZeroLatencyChatClient(), AGENT_INSTRUCTIONS, name=AGENT_NAME, context_providers=[InMemoryHistoryProvider()]
    )


def _core_session(agent: Agent, records: list[dict[str, Any]]) -> AgentSession:
    """A fresh core session whose in-memory history holds the stored records as core messages."""
    session = agent.create_session(session_id="core-reference")
    session.state[InMemoryHistoryProvider.DEFAULT_SOURCE_ID] = {
        "messages": [record_to_message(record, AGENT_NAME) for record in records]
    }
    return session


def _core_run(state: str, turn: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Core's in-memory `agent.run` over the snapshot's messages with no host: the reference for our overhead.

    It runs on an event loop in a thread of its own, as any Functions host must run an agent (entity functions are
    synchronous; the published host does the same): on the calling thread the same run costs about a quarter less.
    """
    agent = _core_agent()
    records = json.loads(state)["messages"]
    session_box: dict[str, AgentSession] = {}

    def prepare() -> None:
        session_box["session"] = _core_session(agent, records)

    def action() -> None:
        _CORE_LOOP.run(agent.run(user_message(turn), session=session_box["session"]))

    return action, prepare


def _core_restored_run(state: str, turn: int) -> Callable[[], Any]:
    """Core's own cold turn: the session restored from the JSON core writes for it, then the same run as `_core_run`.

    `AgentSession.to_dict()`/`from_dict()` is core's own way to keep a session between runs, so this is what a host
    built on core's persistence alone pays for a conversation this process did not just write.
    """
    agent = _core_agent()
    persisted = json.dumps(_core_session(agent, json.loads(state)["messages"]).to_dict())

    def action() -> None:
        restored = AgentSession.from_dict(json.loads(persisted))
        _CORE_LOOP.run(agent.run(user_message(turn), session=restored))

    return action


def _core_copies(state: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The two copies of the whole history core makes in every run, alone: the history provider adds the loaded
    messages to the run's context as copies (`SessionContext.extend_messages`), and the function-invocation layer
    of the chat client copies every message it is sent. Core's private helper is timed directly, being the code
    its layer runs."""
    provider = InMemoryHistoryProvider()
    messages = [record_to_message(record, AGENT_NAME) for record in json.loads(state)["messages"]]
    context_box: dict[str, SessionContext] = {}

    def prepare() -> None:
        context_box["context"] = SessionContext(session_id="core-reference", input_messages=[])

    def action() -> None:
        context_box["context"].extend_messages(provider, messages)
        _copy_messages_for_function_invocation(messages)

    return action, prepare


def checked(output: str) -> str:
    """The new state of one batch; fail loudly when an operation failed, so a failure is never timed as a turn."""
    decoded = json.loads(output)
    for result in decoded["results"]:
        payload = json.loads(result["result"]) if isinstance(result["result"], str) else result["result"]
        if result["isError"] or not isinstance(payload, dict) or payload.get("status") != "completed":
            raise RuntimeError(f"The entity did not complete the turn: {payload}")
    state = decoded["entityState"]
    if not isinstance(state, str):
        raise RuntimeError("The entity returned no state.")
    return state


def unbounded_settings() -> HostSettings:
    """Settings under which the conversation keeps every message (retention `auto`, a budget never reached)."""
    return HostSettings(retention=RetentionSettings(mode="auto", max_state_bytes=UNBOUNDED_BYTES))


def measure_turn_costs(sizes: list[int], repeats: int, published: PublishedHost | None = None) -> list[TurnCost]:
    """Section 1: one conversation grown to each size (stored messages), one more turn timed from each.

    With `published`, the published host grows the same conversation and is timed in the same rounds; what it
    stored is in each cost's `extra["published"]`.
    """
    bench = EntityBench(unbounded_settings())
    costs: list[TurnCost] = []
    for size in sorted(sizes):
        snapshot = bench.grow_to_messages(size)
        grown = published.grow(size) if published else {}
        cost = bench.time_next_turn(snapshot, repeats, published=published)
        if published:
            cost.extra["published"].update(grown)
        costs.append(cost)
    return costs
