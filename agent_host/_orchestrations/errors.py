"""Why an agent turn run from an orchestration did not give the orchestration an answer.

AgentTurnError                 the turn failed, expired, or its answer could not come back (`code` says which)
 └── StructuredOutputError     invalid_structured_output: the answer does not validate as the requested model

Each fails the orchestrator's task, so the orchestration can catch it (`except AgentTurnError as error`); one it
does not catch fails the orchestration with the message. Knows nothing about entities or HTTP.
"""

from __future__ import annotations

from typing import Any

# Why an agent call has no answer for the orchestration, beyond the codes a failed turn records (`turn_failed`,
# `state_capacity_exceeded`, ...). They fail an orchestrator's task and never answer an HTTP request, so they have
# no status in `_errors.ERROR_STATUS`.
TURN_EXPIRED = "turn_expired"
TURN_CANCELLED = "turn_cancelled"
REPLY_TOO_LARGE = "reply_too_large"
ENTITY_CALL_FAILED = "entity_call_failed"
INVALID_REPLY = "invalid_reply"
INVALID_STRUCTURED_OUTPUT = "invalid_structured_output"


class AgentTurnError(Exception):
    """An agent turn taken from an orchestration ended without an answer for it.

    Attributes:
        code: The turn's error code (`turn_failed`, `state_capacity_exceeded`, ...) or the host's reason
            (`turn_expired`, `reply_too_large`, `entity_call_failed`, `invalid_reply`, `invalid_structured_output`).
        message: What went wrong, as the turn recorded it or as the host found it.
        agent_name: The agent.
        conversation_id: The conversation (the session's id), readable over HTTP.
        turn_id: The turn, readable at `.../conversations/{conversation_id}/turns/{turn_id}`.
    """

    def __init__(self, message: str, *, code: str, agent_name: str, conversation_id: str, turn_id: str) -> None:
        super().__init__(
            f"Agent '{agent_name}' turn '{turn_id}' in conversation '{conversation_id}' failed ({code}): {message}"
        )
        self.code = code
        self.message = message
        self.agent_name = agent_name
        self.conversation_id = conversation_id
        self.turn_id = turn_id


class StructuredOutputError(AgentTurnError):
    """The turn completed, but its answer is not a valid instance of the requested `response_format`.

    Attributes:
        model_name: The requested model's name.
        response: The answer as the agent gave it (its `text` is what failed to validate).
    """

    def __init__(self, problem: str, *, model_name: str, response: Any, **turn: str) -> None:
        super().__init__(
            f"the answer is not a valid {model_name}: {problem}. The turn is recorded as the agent answered it; "
            "catch this error to retry with clearer instructions.",
            code=INVALID_STRUCTURED_OUTPUT,
            **turn,
        )
        self.model_name = model_name
        self.response = response
