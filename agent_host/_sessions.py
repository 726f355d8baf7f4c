"""Agent sessions to and from entity state: restored onto the agent's own session type, saved only if serializable.

The durable history provider's slice is never saved here: it is derived from the stored transcript.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agent_framework import AgentSession, SupportsAgentRun

logger = logging.getLogger("agent_host.sessions")


def session_id_for(agent_name: str, conversation_id: str) -> str:
    """The core session id: stable per conversation and distinct per agent (failure 11).

    Agent names contain no dot, so the first dot separates the two parts unambiguously.
    """
    return f"{agent_name}.{conversation_id}"


def restore_session(agent: SupportsAgentRun, session_id: str, stored: dict[str, Any] | None) -> AgentSession:
    """A session built by the agent's own `create_session`, carrying the stored service id and provider state."""
    session = agent.create_session(session_id=session_id)
    if stored:
        restored = AgentSession.from_dict({**stored, "session_id": session_id})
        session.service_session_id = restored.service_session_id
        session.state.update(restored.state)
    return session


def snapshot_session(
    session: AgentSession, *, derived_source_id: str | None, last_good: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The session as stored, without the derived history slice; the last good one if it won't serialize.

    A value that cannot be serialized must not fail the save and bury the turn's answer (failure 12).
    """
    state = {key: value for key, value in session.state.items() if key != derived_source_id}
    trimmed = AgentSession(session_id=session.session_id, service_session_id=session.service_session_id)
    trimmed.state = state
    try:
        payload = trimmed.to_dict()
        json.dumps(payload)
    except (TypeError, ValueError) as exc:
        offending = _first_unserializable_key(state)
        logger.warning(
            "Session state key '%s' of session '%s' cannot be serialized (%s); kept the last good session.",
            offending,
            session.session_id,
            type(exc).__name__,
        )
        return last_good
    payload.pop("session_id", None)
    return payload if payload.get("state") or payload.get("service_session_id") else None


def _first_unserializable_key(state: dict[str, Any]) -> str:
    for key, value in state.items():
        probe = AgentSession()
        probe.state = {key: value}
        try:
            json.dumps(probe.to_dict())
        except (TypeError, ValueError):
            return key
    return "?"
