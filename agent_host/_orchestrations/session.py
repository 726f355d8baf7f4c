"""The session an orchestration passes to `run`: which conversation (entity key) of which agent a turn joins."""

from __future__ import annotations

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
