"""The result of a `run` operation: the turn's id and status, and for a caller that asked, its answer, bounded in size.

An orchestration reads a turn only through the operation result its `call_entity` records, so that result carries
the answer's stored messages (`RunReply`); every other caller reads the turn record from the state and gets the
short result. Knows nothing about HTTP or orchestrations.
"""

from __future__ import annotations

import json
from typing import Any, Final

from .._contract import MAX_REPLY_BYTES, RunReply
from .state import TURNS_KEY, StoredState
from .turn_receipts import answer_messages

EXPIRED_STATUS: Final = "expired"


def run_result(
    state: StoredState, turn_id: str, *, reply: bool, duplicate: bool = False, max_bytes: int = MAX_REPLY_BYTES
) -> dict[str, Any]:
    """The `run` operation's result for a turn recorded in `state`.

    Args:
        state: The conversation holding the turn's record.
        turn_id: The turn.
        reply: Whether the caller asked for the answer (`RunOperation.reply`).
        duplicate: Whether the turn had already run (a redelivered or retried operation).
        max_bytes: The most the result may hold; past it the answer is left out and its size given instead.
    """
    record = state[TURNS_KEY][turn_id]
    if not reply:
        short: dict[str, Any] = {"turnId": turn_id, "status": record["status"]}
        if duplicate:
            short["duplicate"] = True
        return short
    result = RunReply(turn_id=turn_id, status=record["status"], duplicate=duplicate, at=record.get("at"))
    if record["status"] == "failed":
        result.error = dict(record["error"])
    else:
        result.messages = answer_messages(state, record)
        result.usage = record.get("usage")
    return _bounded(result.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True), max_bytes)


def expired_result(turn_id: str) -> dict[str, Any]:
    """The result for a turn that ran but whose record is no longer kept: it is not run again (failure 9)."""
    return RunReply(turn_id=turn_id, status=EXPIRED_STATUS, duplicate=True).model_dump(
        by_alias=True, exclude_none=True, include={"turn_id", "status", "duplicate"}
    )


def _bounded(result: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    size = len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size <= max_bytes:
        return result
    # The turn is recorded in full; only this copy of its answer is left out (MAX_REPLY_BYTES says why).
    kept = {key: value for key, value in result.items() if key not in ("messages", "usage")}
    return {**kept, "replyBytes": size}
