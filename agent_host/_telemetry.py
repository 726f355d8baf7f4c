"""OpenTelemetry metrics and structured logs for turns, state size, evictions and capacity refusals.

Metric attributes are bounded (agent name, outcome, error code, retention mode): never ids or content, which
would make every conversation its own time series. Agent Framework's own traces are left as they are.
"""

from __future__ import annotations

import logging

from opentelemetry import metrics

logger = logging.getLogger("agent_host.turns")

METER_NAME = "agent_host"


class TurnTelemetry:
    """The host's instruments on one meter."""

    def __init__(self, meter: metrics.Meter) -> None:
        self.turn_duration = meter.create_histogram(
            "agent_host.turn.duration", unit="s", description="Time an entity operation spent on one turn."
        )
        self.turns = meter.create_counter("agent_host.turns", unit="{turn}", description="Turns by outcome.")
        self.state_size = meter.create_histogram(
            "agent_host.state.size", unit="By", description="Stored size of a conversation after a turn."
        )
        self.evicted_messages = meter.create_counter(
            "agent_host.retention.evicted_messages",
            unit="{message}",
            description="Messages retention deleted from conversations.",
        )
        self.expired_conversations = meter.create_counter(
            "agent_host.retention.expired_conversations",
            unit="{conversation}",
            description="Conversations deleted because they were idle for their TTL.",
        )
        self.capacity_refusals = meter.create_counter(
            "agent_host.retention.capacity_refusals",
            unit="{turn}",
            description="Turns refused or flagged because a conversation is over its byte budget.",
        )
        self.checkpoint_replays = meter.create_counter(
            "agent_host.checkpoints.replayed_steps",
            unit="{step}",
            description="Model calls and tool calls a re-run turn took from its journal instead of repeating them.",
        )
        self.checkpoint_unavailable = meter.create_counter(
            "agent_host.checkpoints.unavailable",
            unit="{turn}",
            description="Turns (or their rest) run without checkpoints: no store, a failing store, another agent type.",
        )

    def record_turn(
        self,
        *,
        agent: str,
        conversation_id: str,
        turn_id: str,
        outcome: str,
        error_code: str | None,
        seconds: float,
        state_bytes: int,
        mode: str,
        evicted: int,
    ) -> None:
        """Record one finished entity operation, as metrics and one structured log line (no content)."""
        attributes = {"agent": agent, "outcome": outcome}
        if error_code:
            attributes["error.code"] = error_code
        self.turns.add(1, attributes)
        self.turn_duration.record(seconds, attributes)
        self.state_size.record(state_bytes, {"agent": agent})
        if evicted:
            self.evicted_messages.add(evicted, {"agent": agent, "mode": mode})
        if error_code == "state_capacity_exceeded":
            self.capacity_refusals.add(1, {"agent": agent, "mode": mode})
        logger.info(
            "turn %s agent=%s conversation=%s outcome=%s%s duration_ms=%.1f state_bytes=%d evicted=%d",
            turn_id,
            agent,
            conversation_id,
            outcome,
            f" error={error_code}" if error_code else "",
            seconds * 1000,
            state_bytes,
            evicted,
            extra={
                "agent": agent,
                "conversation_id": conversation_id,
                "turn_id": turn_id,
                "outcome": outcome,
                "error_code": error_code,
                "duration_ms": round(seconds * 1000, 1),
                "state_bytes": state_bytes,
                "evicted_messages": evicted,
            },
        )

    def record_expiry(self, *, agent: str) -> None:
        """Count one conversation deleted for being idle (the deletion's log line is retention's)."""
        self.expired_conversations.add(1, {"agent": agent})

    def record_checkpoint_replay(self, *, agent: str, step: str) -> None:
        """Count one step (`model` or `tool`) replayed from a turn's journal."""
        self.checkpoint_replays.add(1, {"agent": agent, "step": step})

    def record_checkpoint_unavailable(self, *, agent: str, reason: str) -> None:
        """Count one turn that ran, or went on, without checkpoints, and why (a bounded code)."""
        self.checkpoint_unavailable.add(1, {"agent": agent, "reason": reason})


_telemetry: TurnTelemetry | None = None


def telemetry() -> TurnTelemetry:
    """The process's instruments, created on first use from the global meter provider.

    The API hands out a proxy meter until an SDK provider is configured, so instruments made early still
    report once the app (or Azure Monitor) sets one.
    """
    global _telemetry
    if _telemetry is None:
        _telemetry = TurnTelemetry(metrics.get_meter(METER_NAME))
    return _telemetry
