"""A hosted agent inside a durabletask orchestration, shaped as `AgentFunctionApp.get_agent(context, name)` gives it.

`run` does not run the agent: it returns a task that calls the conversation entity's `run` operation. Every id comes
from the orchestration (`context.new_uuid()`, `context.current_utc_datetime`, its instance id), so a replay issues
the same calls with the same turn ids, and a redelivered call finds its turn recorded instead of running the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from agent_framework import AgentResponse
from durabletask import task
from durabletask.entities import EntityInstanceId

from .._contract import RUN_OPERATION, AgentRoute, RunOperation, validate_conversation_id
from .._errors import InvalidRequestError
from .._orchestrations.agent import _DIGEST_DIGITS, ORCHESTRATION_TURN_MARKER, _epoch_ms, _message_text
from .._orchestrations.errors import AgentTurnError
from .._orchestrations.options import run_options
from .._orchestrations.reply import AgentCall
from .._orchestrations.session import ConversationSession, ConversationSessions


class AgentReplyTask(task.CompositeTask[AgentResponse], task.CompletableTask[AgentResponse]):
    """The entity call of one turn, completing with its `AgentResponse`.

    A turn that failed, expired or whose answer does not validate fails the task: the orchestrator receives
    durabletask's `TaskFailedError` (the SDK's one failure type for tasks), whose `details.error_type` names
    `AgentTurnError` (or `StructuredOutputError`) and whose message names the code, agent, conversation and turn.
    """

    def __init__(self, entity_task: task.Task[Any], call: AgentCall) -> None:
        self._call = call
        super().__init__([entity_task])

    def on_child_completed(self, child: task.Task[Any]) -> None:
        """Turn the entity's reply into the answer, or fail with why there is none."""
        if self.is_complete:
            return
        if child.is_failed:
            failed = f"the conversation entity's run operation failed for turn {self._call.turn_id}"
            self.fail(failed, child.get_exception())
            return
        try:
            response = self._call.response_from(child.get_result())
        except AgentTurnError as exc:
            self.fail(str(exc), exc)
            return
        self.complete(response)


class WorkerOrchestrationAgent(ConversationSessions):
    """A hosted agent, bound to one durabletask orchestration's context. Made by `AgentWorker.get_agent`.

    Args:
        context: The orchestration's context.
        route: The agent's registration (its name and its conversations' entity name).
    """

    def __init__(self, context: task.OrchestrationContext, route: AgentRoute) -> None:
        self._context = context
        self._route = route
        self.name = route.name
        self.id = route.name
        self.display_name = route.name
        self.description = f"The hosted agent '{route.name}', run as a durable conversation."

    def create_session(self, *, session_id: str | None = None) -> ConversationSession:
        """A session for a new conversation (its id from `context.new_uuid()`, the same on every replay), or one
        that joins the conversation `session_id`.

        Raises:
            ValueError: `session_id` is not a valid conversation id.
        """
        if session_id is None:
            return ConversationSession(agent_name=self.name, conversation_id=self._context.new_uuid())
        try:
            conversation_id = validate_conversation_id(session_id, self._route)
        except InvalidRequestError as exc:
            raise ValueError(exc.message) from None
        return ConversationSession(agent_name=self.name, conversation_id=conversation_id)

    def run(
        self,
        messages: Any = None,
        *,
        stream: bool = False,
        session: ConversationSession | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> AgentReplyTask:
        """Take one turn in the session's conversation; yield the returned task for the `AgentResponse`.

        Args:
            messages: The user's message: text, a `Message`, or a list of them (text only).
            stream: Must be False: an orchestration receives the whole answer.
            session: From `create_session()`; without one the turn starts a new conversation.
            options: `response_format` (a pydantic model class), `enable_tool_calls`, and chat options.

        Raises:
            ValueError: streaming asked for, no text to send, a session of another agent, or an option the host
                decides.
        """
        if stream:
            raise ValueError("An orchestration receives the whole answer: call run() without stream=True.")
        text = _message_text(messages)
        prepared = run_options(options)
        conversation_id = self._conversation_of(session)
        call = AgentCall(self.name, conversation_id, self._new_turn_id(), prepared.response_format)
        operation = RunOperation(
            turn_id=call.turn_id,
            message=text,
            reply=True,
            options=prepared.sent,
            enable_tool_calls=prepared.tools_enabled,
        )
        entity_task = self._context.call_entity(
            EntityInstanceId(self._route.entity_name, conversation_id),
            RUN_OPERATION,
            operation.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True),
        )
        return AgentReplyTask(entity_task, call)

    def _conversation_of(self, session: ConversationSession | None) -> str:
        if session is None:
            return self.create_session().conversation_id
        if not isinstance(session, ConversationSession) or session.agent_name != self.name:
            raise ValueError(f"Pass a session from {self.name}.create_session() (or get_session(id)).")
        return session.conversation_id

    def _new_turn_id(self) -> str:
        """The next turn id of this orchestration: the same on every replay, different for every call."""
        started = _epoch_ms(self._context.current_utc_datetime)  # the SDK's time is naive UTC
        seed = f"{self._context.instance_id}/{self._context.new_uuid()}".encode()
        digits = hashlib.sha256(seed).hexdigest()[:_DIGEST_DIGITS]
        return f"{started:011x}{ORCHESTRATION_TURN_MARKER}{digits}"
