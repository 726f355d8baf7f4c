"""Turn cost as a conversation grows long under `auto` retention, with a budget reached early.

With `auto` the stored state saws between the watermarks once the budget is reached, so a turn late in a long
conversation should cost about what a turn just after the budget was reached costs. The budget is calibrated on
the same conversation: its high watermark is the state size `budget_turn` turns in.
"""

from __future__ import annotations

import gc
import json
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from agent_host import HostSettings, RetentionSettings
from agent_host._conversation.state_cache import CONVERSATION_CACHE

from .entity_cost import EntityBench, TurnCost, unbounded_settings

HIGH_WATERMARK = 0.85
# Turns before each measuring point whose mean cost is reported, evictions included.
AMORTIZE_TURNS = 20


@dataclass
class RetentionFigures:
    """Turn cost early and late in an `auto`-retention conversation, and what retention did in between."""

    max_state_bytes: int
    early: TurnCost
    late: TurnCost
    early_amortized_ms: float
    late_amortized_ms: float
    evicted_messages: int

    def as_dict(self) -> dict[str, Any]:
        figures = asdict(self)
        figures["early"] = self.early.as_dict()
        figures["late"] = self.late.as_dict()
        return figures


def calibrated_budget(budget_turn: int, max_turn_records: int) -> int:
    """The `max_state_bytes` whose high watermark equals the state size after `budget_turn` turns."""
    bench = EntityBench(_settings(unbounded_settings().retention, max_turn_records))
    snapshot = bench.grow_to(budget_turn)
    return math.ceil(snapshot.state_bytes / HIGH_WATERMARK)


def measure_retention(early_turn: int, late_turn: int, repeats: int, max_turn_records: int) -> RetentionFigures:
    """Section 4: the cost of turn `early_turn + 1` and of turn `late_turn + 1` under `auto` retention.

    Also the mean cost of the turns just before each, evictions included: both windows are replayed from the
    states they started from, round by round, so early and late share the machine's conditions.
    """
    budget = calibrated_budget(early_turn, max_turn_records)
    bench = EntityBench(_settings(RetentionSettings(mode="auto", max_state_bytes=budget), max_turn_records))
    window = min(AMORTIZE_TURNS, early_turn)
    starts = [_grown_to(bench, early_turn - window)]
    early = bench.time_next_turn(bench.grow_to(early_turn), repeats, with_core=False)
    starts.append(_grown_to(bench, late_turn - window))
    late_snapshot = bench.grow_to(late_turn)
    late = bench.time_next_turn(late_snapshot, repeats, with_core=False)
    rounds: list[list[float]] = [[], []]
    for _ in range(repeats):
        for spent, (turn, state) in zip(rounds, starts, strict=True):
            spent.append(_window_ms(bench, turn, state, window))
    truncation = json.loads(late_snapshot.state).get("truncation") or {}
    return RetentionFigures(
        max_state_bytes=budget,
        early=early,
        late=late,
        early_amortized_ms=statistics.median(rounds[0]) / window,
        late_amortized_ms=statistics.median(rounds[1]) / window,
        evicted_messages=int(truncation.get("evictedMessages", 0)),
    )


def _settings(retention: RetentionSettings, max_turn_records: int) -> HostSettings:
    return HostSettings(retention=retention, max_turn_records=max_turn_records)


def _grown_to(bench: EntityBench, turn: int) -> tuple[int, str | None]:
    """The conversation after `turn` turns (None before the first), as a window's starting point."""
    if turn > bench.turns:
        bench.grow_to(turn)
    return bench.turns, bench.state


def _window_ms(bench: EntityBench, turn: int, state: str | None, window: int) -> float:
    """CPU time of the `window` turns after `turn`, replayed from `state` (the first one as after a restart)."""
    CONVERSATION_CACHE.clear()
    gc.collect()
    spent = 0.0
    for number in range(turn + 1, turn + window + 1):
        elapsed, state = bench.timed_run(state, number)
        spent += elapsed
    return spent
