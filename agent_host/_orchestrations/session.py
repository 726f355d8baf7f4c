"""The session an orchestration passes to `run`: which conversation (entity key) of which agent a turn joins."""

from __future__ import annotations

from abc import ABC, abstractmethod

from agent_framework import AgentSession


class ConversationSession(AgentSession):
    """One durable conversation of one hosted agent, named by its conversation id.

    The id is the one the HTTP API serves (`/api/agents/{agent}/conversations/{conversation_id}`), so a person and
    an orchestration can take turns in the same conversation. Its history lives in the conversation entity, not in
    this object: the session only names the conversation.

    Args:
        agent_name: The agent whose conversation this is.
        conversation_id: The conversation id (the entity key).
    """

    def __init__(self, *, agent_name: str, conversation_id: str) -> None:
        super().__init__(session_id=conversation_id)
        self.agent_name = agent_name

    @property
    def conversation_id(self) -> str:
        """The conversation id: the entity key, and the id in the HTTP routes."""
        return self.session_id


class ConversationSessions(ABC):
    """The published agents' session methods, for every agent handle that takes turns in hosted conversations."""

    @abstractmethod
    def create_session(self, *, session_id: str | None = None) -> ConversationSession:
        """A session for a new conversation, or one that joins the conversation `session_id`."""

    def get_session(self, service_session_id: str, *, session_id: str | None = None) -> ConversationSession:
        """A session that joins the conversation `service_session_id` (the host is the service keeping it).

        Raises:
            ValueError: `session_id` names a different conversation (or the id is not a valid conversation id).
        """
        if session_id is not None and session_id != service_session_id:
            raise ValueError(
                f"get_session({service_session_id!r}, session_id={session_id!r}) names two conversations; "
                "a hosted conversation has one id: pass it once."
            )
        return self.create_session(session_id=service_session_id)
