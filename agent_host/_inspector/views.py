"""What the inspector shows of one conversation, from one read of its state: the summary, the whole transcript with
compaction's annotations, the turn receipts, and where the stored bytes go.

Renders the conversation's read model (`_conversation/view.py`), which measures sizes as the entity measures its
state, so they add up to `stateBytes`; knows no stored key, nor how the entity keeps what it shows.
"""

from __future__ import annotations

from typing import Any

from .._contract import AgentRoute
from .._conversation.view import ConversationView, DeletedView
from .._http.rendering import iso_time, render_approvals, render_conversation, render_message


def render_inspection(agent: AgentRoute, conversation_id: str, state: ConversationView, now_ms: int) -> dict[str, Any]:
    """The conversation as the inspector shows it (excluded messages included; approvals expired at `now_ms`)."""
    return {
        "conversation": render_conversation(agent, conversation_id, state, now_ms),
        "messages": [render_message(record, state.agent_name) for record in state.messages],
        "turns": render_turn_records(state),
        "expiredTurns": list(state.expired_turn_ids),
        "bytes": state_sections(state),
        "budget": budget_lines(state),
        "sizes": size_series(state),
    }


def render_deleted(conversation_id: str, tombstone: DeletedView) -> dict[str, Any]:
    """A deleted conversation as the inspector shows it: when it was deleted and how many turns went with it."""
    return {
        "conversationId": conversation_id,
        "deleted": {"deletedAt": iso_time(tombstone.deleted_at), "removedTurns": len(tombstone.turn_ids)},
    }


def size_series(state: ConversationView) -> list[dict[str, Any]]:
    """The stored size when each kept turn began (its receipt keeps it), oldest first, then the size now."""
    series = [
        {"turnId": turn.turn_id, "at": iso_time(turn.completed_at), "stateBytes": turn.state_bytes_at_start}
        for turn in state.receipts()
        if turn.state_bytes_at_start is not None
    ]
    return [*series, {"turnId": None, "at": iso_time(state.updated_at), "stateBytes": state.state_bytes}]


def render_turn_records(state: ConversationView) -> list[dict[str, Any]]:
    """Every turn receipt the conversation keeps, oldest first, with what it holds and what it costs."""
    rendered = []
    for turn in state.receipts():
        body: dict[str, Any] = {
            "turnId": turn.turn_id,
            "status": turn.status,
            "completedAt": iso_time(turn.completed_at),
            # An id the receipt names is a transcript message holding the answer; a copy is kept since compaction
            # changed that message.
            "answerMessageIds": list(turn.answer_message_ids),
            "answerCopies": turn.answer_copies,
            "keyed": turn.keyed,
            "bytes": turn.stored_bytes,
        }
        for field, value in (
            ("usage", turn.usage),
            ("approvalRequests", render_approvals(turn.approval_requests)),
            ("expiredApprovals", render_approvals(turn.expired_approvals)),
            ("error", turn.error),
            ("input", turn.failed_input),
            ("cancel", turn.cancel),
        ):
            if value:
                body[field] = value
        rendered.append(body)
    return rendered


def state_sections(state: ConversationView) -> dict[str, int]:
    """The stored size in UTF-8 bytes, whole and by section; `other` is the rest (ids, times, settings, syntax)."""
    total = state.state_bytes
    sections = state.section_bytes()
    return {"total": total, **sections, "other": total - sum(sections.values())}


def budget_lines(state: ConversationView) -> dict[str, int]:
    """The byte budget and its watermarks in bytes, as retention computes them."""
    budget = state.budget
    return {
        "maxStateBytes": budget.max_state_bytes,
        "highWatermarkBytes": budget.high_watermark_bytes,
        "lowWatermarkBytes": budget.low_watermark_bytes,
    }
