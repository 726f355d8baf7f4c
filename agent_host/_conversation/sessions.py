"""Agent sessions to and from entity state: restored onto the agent's own session type, saved only if serializable.

The durable history provider's slice is never saved here: it is derived from the stored transcript.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Sequence
from typing import Any

from agent_framework import AgentSession, Content, SupportsAgentRun, register_state_type

logger = logging.getLogger("agent_host.sessions")


def core_state_types() -> list[type]:
    """Core's own types that context providers keep in session state.

    Core's registry is process-local and seeds only `Message`; without these, a cold start would hand tool
    approval and harness state back as plain dicts.
    """
    from agent_framework import BackgroundTaskInfo, FileStoreEntry, TodoItem, ToolApprovalRule, ToolApprovalState

    return [Content, ToolApprovalState, ToolApprovalRule, TodoItem, BackgroundTaskInfo, FileStoreEntry]


def register_state_types(types: Sequence[type]) -> None:
    """Register session state types so they restore as their classes after a cold start.

    Registering a type twice is harmless; two types with one type id are a startup error.

    Raises:
        ValueError: a type's id is already taken by another type.
    """
    for state_type in types:
        try:
            register_state_type(state_type)
        except ValueError as exc:
            raise ValueError(
                f"Session state type {state_type.__qualname__} cannot be registered: {exc} Register it yourself "
                "first with agent_framework.register_state_type(cls, type_id='<package>.<name>')."
            ) from None


def session_id_for(agent_name: str, conversation_id: str) -> str:
    """The core session id: stable per conversation and distinct per agent (architecture.md, failure 11).

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

    A value that cannot be serialized must not fail the save and bury the turn's answer (architecture.md, failure 12).
    """
    # Core gives every provider an empty slice; storing those would only add bytes.
    state = {key: value for key, value in session.state.items() if key != derived_source_id and value != {}}
    trimmed = AgentSession(session_id=session.session_id, service_session_id=session.service_session_id)
    trimmed.state = state
    try:
        payload = _serialized(trimmed)
    except Exception as exc:  # any codec failure: keep the last good session rather than lose the turn
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


def _serialized(session: AgentSession) -> dict[str, Any]:
    """`to_dict()` that fails on anything JSON cannot hold (core only warns and leaves the value as is)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        payload = session.to_dict()
    json.dumps(payload)
    return payload


def _first_unserializable_key(state: dict[str, Any]) -> str:
    for key, value in state.items():
        probe = AgentSession()
        probe.state = {key: value}
        try:
            _serialized(probe)
        except Exception:
            return key
    return "?"
