"""An agent node of a hosted workflow: core's `AgentExecutor` behaviour, with each agent run a conversation turn.

The node keeps core's message cache and `full_conversation` in the orchestrator (rebuilt by replay), projects an
upstream `AgentExecutorResponse` by its `context_mode` (L3-2), and takes each run as a turn on its conversation
entity (one conversation per run and node), sending only the messages the node has not been given (L3-4). The
entity's reply becomes core's `AgentResponse`; the node's output and outgoing `AgentExecutorResponse` are built as
core builds them (L3-3). Tool approvals the agent asks for become the run's pending requests; when all are answered
the node resumes with them, as core's `AgentExecutor` does.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import azure.durable_functions as df
from agent_framework import (
    AgentExecutorRequest,
    AgentExecutorResponse,
    AgentResponse,
    Content,
    Message,
    WorkflowMessage,
)

from .._contract import RUN_OPERATION, ApprovalAnswer, RunOperation
from .._deps.agent_framework_workflows_private import normalize_messages_input
from .._errors import TurnFailedError
from .._expiry.orchestration import watch_task
from .._orchestrations.agent import started_event
from .._orchestrations.errors import AgentTurnError
from .._orchestrations.reply import AgentCall
from .._orchestrations.task import AgentTask
from .._tracing import orchestration_trace_context
from .._turn_ids import format_turn_id
from .codec import Identities
from .projection import Carried, DeliveryLedger, Occurrences, project
from .registration import AgentNode, WorkflowRetryPolicy

# The synthetic turn core's AgentExecutor appends when asked to (`ensure_trailing_user_turn`).
CONTINUE_TEXT = "please continue."
# A workflow agent node's turn id (`_turn_ids.py`): the orchestration's time, this marker, 20 uuid digits.
WORKFLOW_TURN_MARKER = "w"


class UnsupportedAgentRequestError(Exception):
    """The agent asked for user input other than a tool approval, which a hosted node cannot take."""


@dataclass
class PendingRequest:
    """A request for outside input the run is waiting for: who asked, for what, and the response type."""

    request_id: str
    executor_id: str
    data: Any
    response_type: str | None


@dataclass
class NodeState:
    """What core's AgentExecutor keeps between messages, plus the approvals the node waits for."""

    cache: list[Carried] = field(default_factory=list)
    full_conversation: list[Carried] = field(default_factory=list)
    pending: dict[str, Content] = field(default_factory=dict)
    answers: list[Content] = field(default_factory=list)


@dataclass
class NodeEffects:
    """What an executor's work in one superstep produced."""

    sent: list[WorkflowMessage] = field(default_factory=list)
    outputs: list[tuple[str, Any]] = field(default_factory=list)
    requests: list[PendingRequest] = field(default_factory=list)


@dataclass
class RunContext:
    """What every agent node of one run shares: the orchestration, the run's conversation scope, identities."""

    context: df.DurableOrchestrationContext
    scope: str
    identities: Identities
    occurrences: Occurrences
    receipts: DeliveryLedger
    retry: WorkflowRetryPolicy | None
    # How long the nodes' conversations may stay idle before they are deleted (0: never); the first turn a run
    # takes on a node's conversation starts its expiry orchestration.
    conversation_ttl_seconds: float = 0.0


class AgentNodeRunner:
    """Runs one agent node's deliveries of a superstep, as core's AgentExecutor handlers would."""

    def __init__(self, run: RunContext, node: AgentNode, state: NodeState) -> None:
        self._run = run
        self._node = node
        self._state = state
        self._id = node.executor.id

    def take_message(self, message: WorkflowMessage, effects: NodeEffects) -> Generator[Any, Any, None]:
        """Handle one delivered message, by its type, as the matching AgentExecutor handler does."""
        data = message.data
        source = message.source_id
        if isinstance(data, AgentExecutorRequest):
            self._state.cache.extend(self._carried(data.messages, source))
            if data.should_respond:
                yield from self._turn(effects)
            return
        if isinstance(data, AgentExecutorResponse):
            full = self._carried(data.full_conversation, source)
            last = self._carried(data.agent_response.messages, source)
            self._state.cache.extend(
                project(
                    self._node.context_mode,  # type: ignore[arg-type]
                    self._node.context_filter,
                    full,
                    last,
                    minted_by=self._id,
                    occurrences=self._run.occurrences,
                )
            )
            for carried in self._state.cache:
                self._run.identities.remember(carried)
        else:
            self._state.cache.extend(self._carried(normalize_messages_input(data), source))
        yield from self._turn(effects)

    def take_response(self, request_id: str, response: Content, effects: NodeEffects) -> Generator[Any, Any, None]:
        """Handle an answer to one of the node's tool approvals; resume the agent once all are answered."""
        if self._state.pending.pop(request_id, None) is None:
            return
        self._state.answers.append(response)
        if self._state.pending:
            return
        answers, self._state.answers = self._state.answers, []
        # Core resumes with the answers as one user message that replaces the cache.
        resume = self._run.occurrences.mint(self._id, Message(role="user", contents=list(answers)))
        self._state.cache = [self._run.identities.remember(resume)]
        approvals = [ApprovalAnswer(id=str(answer.id), approved=bool(answer.approved)) for answer in answers]
        yield from self._turn(effects, approvals=approvals)

    def _carried(self, messages: list[Message], producer: str) -> list[Carried]:
        return self._run.identities.all_carried(messages, producer=producer, occurrences=self._run.occurrences)

    def _turn(self, effects: NodeEffects, approvals: list[ApprovalAnswer] | None = None) -> Generator[Any, Any, None]:
        invocation = list(self._state.cache)
        if self._node.ensure_trailing_user_turn and invocation and invocation[-1].message.role == "assistant":
            # Invocation-only, as in core: it reaches the model but not the cache or the outgoing conversation.
            invocation.append(self._run.occurrences.mint(self._id, Message(role="user", contents=[CONTINUE_TEXT])))
        sent = [] if approvals else self._run.receipts.unseen(self._id, invocation)
        response = yield from self._call_with_retries(sent, approvals or [])
        self._run.receipts.record(self._id, invocation)
        reply = self._carried(response.messages, self._id)
        self._run.receipts.record(self._id, reply)
        requests = response.user_input_requests
        if requests:
            self._hold(requests, effects)
            return
        effects.outputs.append((self._id, response))
        self._state.full_conversation = [*self._state.cache, *reply]
        outgoing = AgentExecutorResponse(
            self._id, response, [carried.message for carried in self._state.full_conversation]
        )
        effects.sent.append(WorkflowMessage(data=outgoing, source_id=self._id))
        self._state.cache = []

    def _hold(self, requests: list[Content], effects: NodeEffects) -> None:
        for request in requests:
            if request.type != "function_approval_request" or not request.id:
                raise UnsupportedAgentRequestError(
                    f"agent node '{self._id}' asked for user input of type '{request.type}'; a hosted agent node "
                    "can wait for tool approvals (approval_mode='always_require') only."
                )
            self._state.pending[request.id] = request
            effects.requests.append(PendingRequest(request.id, self._id, request, "agent_framework:Content"))

    def _call_with_retries(
        self, sent: list[Carried], approvals: list[ApprovalAnswer]
    ) -> Generator[Any, Any, AgentResponse]:
        policy = self._run.retry
        attempts = policy.max_attempts if policy is not None else 1
        failures = 0
        while True:
            try:
                response: AgentResponse = yield self._call(sent, approvals)
                return response
            except AgentTurnError as error:
                failures += 1
                # Only a failed model run is worth another turn; a refused or unreadable call fails the same way.
                if policy is None or failures >= attempts or error.code != TurnFailedError.codes[0]:
                    raise
                context = self._run.context
                yield context.create_timer(
                    context.current_utc_datetime + datetime.timedelta(seconds=policy.delay_seconds(failures))
                )

    def _call(self, sent: list[Carried], approvals: list[ApprovalAnswer]) -> AgentTask:
        context = self._run.context
        turn_id = _turn_id(context)
        operation = RunOperation(
            turn_id=turn_id,
            messages=None if approvals else [carried.message.to_dict() for carried in sent],
            approvals=approvals,
            reply=True,
            trace_context=orchestration_trace_context(started_event(context)),
        )
        call = AgentCall(self._node.entity_name, self._run.scope, turn_id)
        entity_task = context.call_entity(
            df.EntityId(self._node.entity_name, self._run.scope),
            RUN_OPERATION,
            operation.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True),
        )
        watch = watch_task(context, self._node.entity_name, self._run.scope, self._run.conversation_ttl_seconds)
        return AgentTask(entity_task, call, watch=watch)


def _turn_id(context: df.DurableOrchestrationContext) -> str:
    """The next turn id of this orchestration: the same on every replay, different for every call."""
    moment = context.current_utc_datetime
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    started = int(moment.timestamp() * 1000)
    return format_turn_id(started, WORKFLOW_TURN_MARKER, uuid.UUID(context.new_uuid()).hex[:20])
