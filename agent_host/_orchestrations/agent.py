"""OrchestrationAgent: a hosted agent as an orchestrator function uses it, shaped like agent-framework-azurefunctions'.

`run` does not run the agent: it returns a task that calls the conversation entity's `run` operation, which takes
the turn like any other (history, session, compaction, retention, turn records). Every id comes from the
orchestration (`context.new_uuid()`, `context.current_utc_datetime`, the execution id), so a replay issues the same
calls with the same turn ids, and a redelivered call finds its turn recorded instead of running the model again.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping
from typing import Any

import azure.durable_functions as df
from agent_framework import AgentSession, normalize_messages
from azure.durable_functions.models.history import HistoryEventType

from .._contract import RUN_OPERATION, AgentRoute, RunOperation, validate_conversation_id
from .._errors import InvalidRequestError
from .._expiry.orchestration import watch_task
from .._tracing import orchestration_trace_context
from .._turn_ids import format_turn_id
from .options import run_options
from .reply import AgentCall
from .session import ConversationSession, ConversationSessions
from .task import AgentTask

# An orchestration's turn id (`_turn_ids.py`): the orchestration's time, this marker, and 20 hex digits of a digest of
# the execution id and a replay-safe uuid. The marker is not a hex digit, nor the Idempotency-Key marker.
ORCHESTRATION_TURN_MARKER = "o"
_DIGEST_DIGITS = 20


class OrchestrationAgent(ConversationSessions):
    """A hosted agent, bound to one orchestration's context.

    Args:
        context: The orchestration's context.
        route: The agent's registration (its name and its conversations' entity name).
    """

    def __init__(self, context: df.DurableOrchestrationContext, route: AgentRoute) -> None:
        self._context = context
        self._route = route
        self._execution = _execution_id(context)
        self.name = route.name
        self.id = route.name
        self.display_name = route.name
        self.description = f"The hosted agent '{route.name}', run as a durable conversation."

    def create_session(self, *, session_id: str | None = None) -> ConversationSession:
        """A session for a new conversation, or one that joins the conversation `session_id`.

        Without an id the conversation id comes from `context.new_uuid()`, the same on every replay. With one, the
        turns join that conversation: the one the HTTP API serves under the same id.

        Raises:
            ValueError: `session_id` is not a valid conversation id.
        """
        conversation_id = (
            self._context.new_uuid() if session_id is None else _checked_conversation_id(session_id, self._route)
        )
        return ConversationSession(agent_name=self.name, conversation_id=conversation_id)

    def run(
        self,
        messages: Any = None,
        *,
        stream: bool = False,
        session: AgentSession | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> AgentTask:
        """Take one turn in the session's conversation; yield the returned task for the `AgentResponse`.

        Args:
            messages: The user's message: text, a `Message`, or a list of them (text only).
            stream: Must be False: an orchestration receives the whole answer.
            session: From `create_session()`; without one the turn starts a new conversation.
            options: `response_format` (a pydantic model class: `response.value` is then an instance of it),
                `enable_tool_calls`, and chat options for the agent (`temperature`, ...), as JSON values.

        Raises:
            ValueError: streaming asked for, no text to send, a session of another agent, or an option the host
                decides.
            TypeError: an option that cannot travel as JSON, or a `response_format` that is not a model class.
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
            trace_context=orchestration_trace_context(started_event(self._context)),
        )
        entity_task = self._context.call_entity(
            df.EntityId(self._route.entity_name, conversation_id),
            RUN_OPERATION,
            operation.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True),
        )
        route = self._route
        watch = watch_task(self._context, route.entity_name, conversation_id, route.conversation_ttl_seconds)
        return AgentTask(entity_task, call, watch=watch)

    def _conversation_of(self, session: AgentSession | None) -> str:
        if session is None:
            return self.create_session().conversation_id
        if not isinstance(session, ConversationSession):
            raise ValueError(
                f"Pass a session from {self.name}.create_session() (got a {type(session).__name__}); "
                "create_session(session_id=...) joins an existing conversation."
            )
        if session.agent_name != self.name:
            raise ValueError(
                f"The session belongs to agent '{session.agent_name}', not '{self.name}': each agent keeps its own "
                f"conversations. Use {self.name}.create_session()."
            )
        return session.conversation_id

    def _new_turn_id(self) -> str:
        """The next turn id of this orchestration: the same on every replay, different for every call.

        `new_uuid` derives from the instance id, the time and a counter that restarts with each execution; the
        execution id keeps a `continue_as_new` execution that starts at the same time from reusing the ids of the
        one before (its turns would be answered from their records instead of run).
        """
        started = _epoch_ms(self._context.current_utc_datetime)
        seed = f"{self._execution}/{self._context.new_uuid()}".encode()
        digits = hashlib.sha256(seed).hexdigest()[:_DIGEST_DIGITS]
        return format_turn_id(started, ORCHESTRATION_TURN_MARKER, digits)


def orchestration_agent(
    context: df.DurableOrchestrationContext, routes: Mapping[str, AgentRoute], agent_name: str
) -> OrchestrationAgent:
    """The registered agent `agent_name`, bound to the orchestration's context.

    Raises:
        ValueError: no agent of that name is registered.
    """
    route = routes.get(agent_name)
    if route is None:
        known = ", ".join(sorted(routes)) or "none"
        raise ValueError(f"Agent '{agent_name}' is not registered with this app. Registered agents: {known}.")
    return OrchestrationAgent(context, route)


def started_event(context: df.DurableOrchestrationContext) -> Any:
    """The execution's ExecutionStarted history event, or None before it is in the history."""
    return next((event for event in context.histories if event.event_type == HistoryEventType.EXECUTION_STARTED), None)


def _execution_id(context: df.DurableOrchestrationContext) -> str:
    """The id of the orchestration's current execution, as the host's ExecutionStarted event names it ("" if not)."""
    instance = getattr(started_event(context), "OrchestrationInstance", None)
    return str(instance.get("ExecutionId") or "") if isinstance(instance, dict) else ""


def _checked_conversation_id(conversation_id: str, route: AgentRoute) -> str:
    try:
        return validate_conversation_id(conversation_id, route)
    except InvalidRequestError as exc:
        raise ValueError(exc.message) from None


def _message_text(messages: Any) -> str:
    """The text of the user's message(s), joined by newlines as agent-framework-azurefunctions joins them."""
    texts = [message.text for message in normalize_messages(messages)]
    if not texts or not all(texts):
        raise ValueError("run() sends text to the agent: pass a non-empty string (or messages with text).")
    return "\n".join(texts)


def _epoch_ms(moment: datetime.datetime) -> int:
    if moment.tzinfo is None:
        # The SDK reads the host's UTC timestamps; without an offset they are UTC all the same.
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)
