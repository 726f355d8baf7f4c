"""One agent call from an orchestration, and the `AgentResponse` its entity reply becomes.

The conversation entity answers a `run` asked for its reply with the answer's stored message records
(`RunReply`); they are rebuilt with the stored-message codec, exactly as the HTTP API reads them. A reply that says
the turn failed, expired or was too large to return, or an answer that does not validate as the requested model,
becomes an `AgentTurnError`. Pure functions of the recorded result: a replay rebuilds the same response.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_framework import AgentResponse
from pydantic import BaseModel, ValidationError

from .._contract import MAX_REPLY_BYTES, RunReply, describe_problems
from .._errors import TurnFailedError
from .._records import record_to_message
from .errors import INVALID_REPLY, REPLY_TOO_LARGE, TURN_CANCELLED, TURN_EXPIRED, AgentTurnError, StructuredOutputError


@dataclass(frozen=True)
class AgentCall:
    """One `run` of an agent from an orchestration: where it went and what its answer must be.

    Attributes:
        agent_name: The agent.
        conversation_id: The conversation (entity key).
        turn_id: The turn id the call sent.
        response_format: The structured output asked for, if any.
    """

    agent_name: str
    conversation_id: str
    turn_id: str
    response_format: type[BaseModel] | Mapping[str, Any] | None = None

    def error(self, message: str, code: str) -> AgentTurnError:
        """An `AgentTurnError` of this call."""
        return AgentTurnError(message, code=code, **self._names())

    def _names(self) -> dict[str, str]:
        return {"agent_name": self.agent_name, "conversation_id": self.conversation_id, "turn_id": self.turn_id}

    def response_from(self, result: Any) -> AgentResponse:
        """The `AgentResponse` of the entity's reply to this call.

        Raises:
            AgentTurnError: the turn failed or expired, its answer was too large to return, or the reply is not
                one this host writes.
            StructuredOutputError: the answer does not validate as `response_format`.
        """
        try:
            reply = RunReply.model_validate(result)
        except ValidationError as exc:
            raise self.error(
                f"the conversation entity's reply is not a run reply ({describe_problems(exc)}); is the app running "
                "an older agent_host?",
                INVALID_REPLY,
            ) from None
        if reply.status == "failed":
            error = reply.error or {}
            raise self.error(error.get("message", "the turn failed."), error.get("code", TurnFailedError.codes[0]))
        if reply.status == "cancelled":
            raise self.error(
                "the turn was cancelled (POST .../turns/{turnId}/cancel, or a later turn's ifBusy) before it finished; "
                "what it kept, if anything, is in the conversation's messages.",
                TURN_CANCELLED,
            )
        if reply.status == "expired":
            raise self.error(
                "the turn ran earlier but its record is no longer kept, so its answer cannot be returned and the turn "
                "is not run again. Read the conversation's messages over HTTP.",
                TURN_EXPIRED,
            )
        if reply.messages is None:
            raise self.error(_too_large(reply.reply_bytes, self), REPLY_TOO_LARGE)
        response = AgentResponse(
            messages=[record_to_message(record, self.agent_name) for record in reply.messages],
            response_id=self.turn_id,
            agent_id=self.agent_name,
            created_at=_iso(reply.at),
            usage_details=reply.usage,  # type: ignore[arg-type]
            response_format=self.response_format,
        )
        if self.response_format is not None:
            self._validate(response)
        return response

    def _validate(self, response: AgentResponse) -> None:
        """Parse the answer as core does (`AgentResponse.value`); a failure names the model and the problems."""
        name = getattr(self.response_format, "__name__", "JSON object")
        try:
            value = response.value
        except ValidationError as exc:
            raise StructuredOutputError(
                _shortened(describe_problems(exc, {"": "its text"})),
                model_name=name,
                response=response,
                **self._names(),
            ) from None
        except ValueError as exc:
            raise StructuredOutputError(
                _shortened(str(exc)), model_name=name, response=response, **self._names()
            ) from None
        if value is None:
            raise StructuredOutputError(
                "the agent answered with no text", model_name=name, response=response, **self._names()
            )


def _shortened(problem: str, limit: int = 600) -> str:
    # The problems quote the answer; an orchestration's failure message should name them, not repeat the answer.
    return problem if len(problem) <= limit else problem[: limit - 3] + "..."


def _too_large(size: int | None, call: AgentCall) -> str:
    return (
        f"the answer is {size} bytes, over the {MAX_REPLY_BYTES} bytes a conversation entity returns to an "
        f"orchestration (MAX_REPLY_BYTES). The turn completed and is recorded: read it at "
        f"/api/agents/{call.agent_name}/conversations/{call.conversation_id}/turns/{call.turn_id}, or ask the agent "
        "for a shorter answer."
    )


def _iso(at_ms: int | None) -> str | None:
    if at_ms is None:
        return None
    moment = datetime.datetime.fromtimestamp(at_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
