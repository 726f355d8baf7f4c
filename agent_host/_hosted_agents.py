"""What registering an agent builds on either host (`AgentFunctionApp.add_agent`, `AgentWorker.add_agent`): its
options checked against the host's settings, and its conversation entity. Knows settings and the entity's
constructor, nothing of Functions or durabletask.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from agent_framework import SupportsAgentRun

from ._approval_ttl import APPROVAL_TTL_OFF, approval_ttl_seconds_of
from ._clock import Clock
from ._conversation.entity import ConversationEntityFunction, StreamStoreLookup
from ._conversation.history_plan import plan_history
from ._expiry_settings import agent_ttl
from ._retention_settings import RetentionModeName, RetentionSettings
from ._settings import HostSettings, retention_from
from ._streaming.callbacks import AgentResponseCallbackProtocol


@dataclass(frozen=True)
class AgentOptions:
    """The per-agent options both hosts' `add_agent` take; None follows the host's settings."""

    retention_mode: RetentionModeName | None = None
    max_state_bytes: int | None = None
    conversation_ttl: datetime.timedelta | float | None = None
    approval_ttl: datetime.timedelta | float | None = None
    checkpoints: bool | None = None


@dataclass(frozen=True)
class HostedAgent:
    """A registered agent's conversation entity, and its idle TTL in seconds (0: never expires)."""

    entity: ConversationEntityFunction
    ttl_seconds: float


def conversation_entity(
    name: str,
    agent: SupportsAgentRun,
    *,
    settings: HostSettings,
    clock: Clock,
    stream_store: StreamStoreLookup,
    callback: AgentResponseCallbackProtocol | None,
    retention: RetentionSettings | None = None,
    approval_ttl_seconds: float = APPROVAL_TTL_OFF,
    checkpoints: bool | None = None,
) -> ConversationEntityFunction:
    """The conversation entity that runs `agent`'s turns under the host's settings (retention, records, timeouts,
    checkpoints), with what the agent's options changed."""
    return ConversationEntityFunction(
        name,
        agent,
        plan=plan_history(agent),
        retention=settings.retention if retention is None else retention,
        max_turn_records=settings.max_turn_records,
        turn_record_ttl_seconds=settings.turn_record_ttl_seconds,
        run_timeout_seconds=settings.run_timeout_seconds,
        clock=clock,
        stream_store=stream_store,
        callback=callback,
        turn_error_details=settings.turn_error_details,
        approval_ttl_seconds=approval_ttl_seconds,
        checkpoints=settings.checkpoints if checkpoints is None else checkpoints,
    )


def hosted_agent(
    name: str,
    agent: SupportsAgentRun,
    options: AgentOptions,
    *,
    settings: HostSettings,
    clock: Clock,
    stream_store: StreamStoreLookup,
    callback: AgentResponseCallbackProtocol | None,
) -> HostedAgent:
    """Check an agent's options and build its conversation entity.

    Raises:
        ValueError: a retention value, the TTL or the approval TTL is invalid (the message names the parameter).
    """
    retention = retention_from(
        settings.retention,
        {"mode": options.retention_mode, "max_state_bytes": options.max_state_bytes},
        names={"mode": "retention_mode", "max_state_bytes": "max_state_bytes"},
        source=f"add_agent({name!r}):",
    )
    ttl = agent_ttl(settings.conversation_ttl_seconds, options.conversation_ttl, name)
    approval_ttl_seconds = (
        APPROVAL_TTL_OFF
        if options.approval_ttl is None
        else approval_ttl_seconds_of(options.approval_ttl, f"add_agent({name!r}): approval_ttl")
    )
    entity = conversation_entity(
        name,
        agent,
        settings=settings,
        clock=clock,
        stream_store=stream_store,
        callback=callback,
        retention=retention,
        approval_ttl_seconds=approval_ttl_seconds,
        checkpoints=options.checkpoints,
    )
    return HostedAgent(entity, ttl)
