"""Turn cost as a conversation grows long under `auto` retention, with a budget reached early.

With `auto` the stored state saws between the watermarks once the budget is reached, so a turn late in a long
conversation should cost about what a turn just after the budget was reached costs. The budget is calibrated on
the same conversation: its high watermark is the state size `budget_turn` turns in.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from agent_host import HostSettings
from agent_host._state import RetentionSettings

from .entity_cost import EntityBench, TurnCost, unbounded_settings

HIGH_WATERMARK = 0.85
# Turns around each measuring point whose growth cost is averaged, evictions included.
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
    """Section 4: the cost of turn `early_turn + 1` and of turn `late_turn + 1` under `auto` retention."""
    budget = calibrated_budget(early_turn, max_turn_records)
    bench = EntityBench(_settings(RetentionSettings(mode="auto", max_state_bytes=budget), max_turn_records))
    early_snapshot = bench.grow_to(early_turn)
    early = bench.time_next_turn(early_snapshot, repeats, with_core=False)
    early_amortized = _amortized(bench.grow_ms, early_turn)
    late_snapshot = bench.grow_to(late_turn)
    late = bench.time_next_turn(late_snapshot, repeats, with_core=False)
    late_amortized = _amortized(bench.grow_ms, late_turn)
    truncation = json.loads(late_snapshot.state).get("truncation") or {}
    return RetentionFigures(
        max_state_bytes=budget,
        early=early,
        late=late,
        early_amortized_ms=early_amortized,
        late_amortized_ms=late_amortized,
        evicted_messages=int(truncation.get("evictedMessages", 0)),
    )


def _settings(retention: RetentionSettings, max_turn_records: int) -> HostSettings:
    return HostSettings(retention=retention, max_turn_records=max_turn_records)


def _amortized(grow_ms: list[float], turn: int) -> float:
    """Mean CPU time of the turns just before `turn`: the evictions among them are paid for in the mean."""
    window = grow_ms[max(0, turn - AMORTIZE_TURNS) : turn]
    return statistics.fmean(window) if window else 0.0
