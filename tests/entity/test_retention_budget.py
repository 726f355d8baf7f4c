"""Retention bounds the whole state, turn receipts included, after every committed turn (issue 13's three cases).

The cases are the conversations that grew past their budget when receipts were costed as fixed: 31% over a
30,000-byte budget, 7.5x over 64 KiB, and 2.9 MB under the defaults. `bench/retention_budget.py` replays them
through the entity function; `docs/retention.md` shows the figures.
"""

from __future__ import annotations

import pytest

from agent_host import RetentionSettings
from agent_host._conversation.retention import RECEIPT_SHARE
from bench.retention_budget import CASES, BudgetCase, replay


@pytest.mark.parametrize("mode", ["auto", "follow_compaction"])
@pytest.mark.parametrize("case", CASES, ids=["30000-bytes", "64-KiB", "defaults"])
def test_every_committed_turn_leaves_the_whole_state_within_its_budget(case: BudgetCase, mode: str) -> None:
    retention = RetentionSettings(mode=mode, max_state_bytes=case.retention.max_state_bytes)
    run = replay(BudgetCase(case.name, case.turns, case.message_chars, retention))

    budget = retention.max_state_bytes
    over = [(sizes.turn, sizes.state_bytes) for sizes in run.sizes if sizes.state_bytes > budget]
    assert over == []
    assert all(sizes.receipt_bytes <= budget * RECEIPT_SHARE for sizes in run.sizes)
    assert run.capacity_error is None
    assert run.evicted_messages > 0  # the control: each case needed retention
    last = run.sizes[-1]
    assert last.messages >= 2 and last.receipts >= 1  # the newest exchange and its receipt are always kept
    assert last.transcript_bytes > last.receipt_bytes  # receipts never crowd out the conversation
