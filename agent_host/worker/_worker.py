"""AgentWorker: our conversation entity, unchanged, registered on a durabletask `TaskHubGrpcWorker`.

Registration only: each operation is one call into `_conversation/entity.py` through an entity-context adapter.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from typing import Any

from agent_framework import SupportsAgentRun
from durabletask import task
from durabletask.entities import EntityContext
from durabletask.worker import ConcurrencyOptions, TaskHubGrpcWorker

from .._agent_names import entity_name_for, hosted_agent_name, is_repeated_registration
from .._clock import SYSTEM_CLOCK, Clock
from .._contract import AgentRoute
from .._conversation.entity import ConversationEntityFunction
from .._conversation.sessions import core_state_types, register_state_types
from .._conversation.state_cache import CONVERSATION_CACHE, MB
from .._hosted_agents import AgentOptions, hosted_agent
from .._retention_settings import RetentionModeName
from .._settings import HostSettings
from .._streaming.callbacks import AgentResponseCallbackProtocol
from .._streaming.channel import TurnStreamStore
from .._streaming.store_source import StreamStoreSource, app_stream_store
from ._entity_context import EntityOperationContext
from ._expiry import IdleExpiry
from ._orchestration_agent import WorkerOrchestrationAgent
from ._state_converter import AgentStateConverter

logger = logging.getLogger("agent_host.worker")

# A turn holds a pool thread for its whole model call, so the SDK's default pool (CPU count + 4 threads) caps a
# 2-core worker at 6 turns in flight whatever the backend sends. Model calls wait on the network, not the CPU.
DEFAULT_TURN_THREADS = 32


def worker_options(*, turn_threads: int = DEFAULT_TURN_THREADS) -> dict[str, Any]:
    """Keyword arguments for `TaskHubGrpcWorker(...)` (or `DurableTaskSchedulerWorker(...)`) that `AgentWorker`
    needs: the state converter, and a thread pool sized for model calls.

    Args:
        turn_threads: How many operations (turns) may run at once in this process: each holds a thread for its
            whole model call. The SDK's `ConcurrencyOptions.maximum_thread_pool_workers`.

    Raises:
        ValueError: `turn_threads` is below 1.
    """
    if turn_threads < 1:
        raise ValueError(f"turn_threads must be at least 1, got {turn_threads!r}.")
    return {
        "data_converter": AgentStateConverter(),
        "concurrency_options": ConcurrencyOptions(maximum_thread_pool_workers=turn_threads),
    }


class AgentWorker:
    """Hosts Agent Framework agents as durable conversations on a durabletask worker.

    Each agent gets one entity, `conversation_<agent>`, keyed by the conversation id: the same entity, state and
    guarantees as on Azure Functions (history, compaction, retention, exactly-once turns). Create the worker with
    `worker_options()`; start it with `worker.start()` (or `with worker:`) after registering.

    Args:
        worker: A `TaskHubGrpcWorker`, or `durabletask.azuremanaged`'s `DurableTaskSchedulerWorker`, created with
            `**worker_options()`.
        agents: Agents to register now, as `add_agent(agent)` does.
        default_callback: Called with each update and the answer of every turn of agents without a callback.
        settings: Limits and defaults; read from the environment (`AGENT_HOST_*`) when omitted.
        state_types: Classes your context providers keep in session state (see `AgentFunctionApp`).
        clock: Where wall-clock time comes from (records, TTLs).
        stream_store: Where streamed turns write their events as they run (and cancels and checkpoints live), as
            `AgentFunctionApp(stream_store=...)`; None: the store the settings choose (`AGENT_HOST_STREAM_STORE`, e.g.
            `sqlite:.agent_host/streams.sqlite3`), or none. Readers (`asgi_app`, `AgentClient`) need the same store.

    Raises:
        ValueError: the worker was not created with `AgentStateConverter` (`**worker_options()`); an agent is
            invalid as `add_agent` says.
    """

    def __init__(
        self,
        worker: TaskHubGrpcWorker,
        agents: Sequence[SupportsAgentRun] = (),
        *,
        default_callback: AgentResponseCallbackProtocol | None = None,
        settings: HostSettings | None = None,
        state_types: Sequence[type] = (),
        clock: Clock = SYSTEM_CLOCK,
        stream_store: TurnStreamStore | None = None,
    ) -> None:
        _require_state_converter(worker)
        self.worker = worker
        self.default_callback = default_callback
        self.settings = settings or HostSettings.from_environment()
        self.clock = clock
        self._durable_task_scheduler = self.settings.durable_task_scheduler or _is_scheduler_worker(worker)
        self._stream_store = app_stream_store(stream_store, self.settings.turn_record_ttl_seconds)
        self._entities: dict[str, ConversationEntityFunction] = {}
        self._routes: dict[str, AgentRoute] = {}
        register_state_types([*core_state_types(), *state_types])
        CONVERSATION_CACHE.resize(self.settings.state_cache_mb * MB)
        for agent in agents:
            self.add_agent(agent)

    @property
    def agents(self) -> dict[str, SupportsAgentRun]:
        """The registered agents, by name."""
        return {name: entity.agent for name, entity in self._entities.items()}

    @property
    def stream_store(self) -> StreamStoreSource:
        """The turn stream store, resolved on first use: call it for the store, or None when there is none."""
        return self._stream_store

    def close(self) -> None:
        """Release the turn stream store the settings chose (a store passed as `stream_store=` stays open: it is
        yours). Call it once the worker has stopped."""
        self._stream_store.close()

    @property
    def agent_routes(self) -> dict[str, AgentRoute]:
        """What the HTTP side knows of each registered agent, by name (the ASGI app serves them)."""
        return dict(self._routes)

    def add_agent(
        self,
        agent: SupportsAgentRun,
        callback: AgentResponseCallbackProtocol | None = None,
        *,
        entity_id: str | None = None,
        retention_mode: RetentionModeName | None = None,
        max_state_bytes: int | None = None,
        state_types: Sequence[type] = (),
        conversation_ttl: datetime.timedelta | float | None = None,
        approval_ttl: datetime.timedelta | float | None = None,
        checkpoints: bool | None = None,
    ) -> None:
        """Register an agent's conversation entity, `conversation_<name>`, on the worker.

        The options are `AgentFunctionApp.add_agent`'s that apply without HTTP; the same agent object added twice
        under its name is skipped with a warning, as there.

        Args:
            agent: The agent; it needs a unique `name`. Never mutated: each turn runs on a shallow copy.
            callback: Called with each update and the answer of every turn of this agent (its turns then run
                streaming); the worker's `default_callback` otherwise.
            entity_id: The name to register the agent under instead of `agent.name`.
            retention_mode: This agent's default retention mode (the `AGENT_HOST_RETENTION_MODE` setting otherwise).
            max_state_bytes: This agent's default byte budget per conversation.
            state_types: Session state classes this agent's providers use.
            conversation_ttl: How long this agent's conversations may stay idle before they are deleted (a
                `timedelta` or seconds; 0 never); None follows `AGENT_HOST_CONVERSATION_TTL`. Each conversation's
                entity schedules its own idle check (`_expiry.py`).
            approval_ttl: How long a tool approval this agent asks for waits for its answer (a `timedelta` or
                seconds, at most a year); once it has passed, the conversation's next turn declines it. None or 0:
                approvals wait until answered. A turn's `approvalTtlSeconds` overrides it.
            checkpoints: Journal each model response and tool result of this agent's turns in the worker's turn
                stream store, so a turn re-run after a crash repeats at most the step in flight; None follows
                `AGENT_HOST_CHECKPOINTS` (on).

        Raises:
            ValueError: the name is missing, invalid, too long for the Durable Task Scheduler, or taken by another
                agent; a state type's id is taken; a retention value, the TTL or the approval TTL is invalid (the
                message names the parameter).
            RuntimeError: the worker is already running (durabletask takes registrations before `start` only).
        """
        register_state_types(state_types)
        name, id_limit = hosted_agent_name(agent, entity_id, durable_task_scheduler=self._durable_task_scheduler)
        known = self._entities.get(name)
        if is_repeated_registration(name, agent, known.agent if known else None, self._entities):
            return
        options = AgentOptions(retention_mode, max_state_bytes, conversation_ttl, approval_ttl, checkpoints)
        hosted = hosted_agent(
            name,
            agent,
            options,
            settings=self.settings,
            clock=self.clock,
            stream_store=self._stream_store,
            callback=callback or self.default_callback,
        )
        entity, ttl, plan = hosted.entity, hosted.ttl_seconds, hosted.entity.plan

        expiry = IdleExpiry(name, ttl, self.clock)

        def conversation_entity(context: EntityContext, operation_input: Any) -> Any:
            def run(given: Any) -> Any:
                operation = EntityOperationContext(context, given)
                entity(operation)  # the adapter has every member of the Functions entity context the entity uses
                return operation.finish()

            return expiry.run(context, operation_input, run)

        self.worker.add_entity(conversation_entity, name=entity_name_for(name))
        self._entities[name] = entity
        # No `conversation_ttl_seconds`: that is for callers that watch a conversation's expiry, and here its
        # entity watches itself.
        self._routes[name] = AgentRoute(
            name=name,
            entity_name=entity_name_for(name),
            history=plan.owner,
            max_conversation_id_length=id_limit,
            agent_type=type(agent).__name__,
            http_enabled=False,
        )

    def get_agent(self, context: task.OrchestrationContext, agent_name: str) -> WorkerOrchestrationAgent:
        """A registered agent for use inside an orchestrator on this worker, as `AgentFunctionApp.get_agent` gives
        it: `agent.create_session()`, then `response = yield agent.run("...", session=session)`.

        Raises:
            ValueError: no agent of that name is registered.
        """
        route = self._routes.get(agent_name)
        if route is None:
            known = ", ".join(sorted(self._routes)) or "none"
            raise ValueError(f"Agent '{agent_name}' is not registered with this worker. Registered agents: {known}.")
        return WorkerOrchestrationAgent(context, route)


def _require_state_converter(worker: TaskHubGrpcWorker) -> None:
    """Refuse a worker whose converter would re-encode our state text (see `_state_converter`).

    The SDK has no public accessor for a worker's converter; when its attribute is missing, nothing is checked.

    Raises:
        ValueError: the worker's converter is not an `AgentStateConverter`.
    """
    converter = getattr(worker, "_data_converter", None)
    if converter is not None and not isinstance(converter, AgentStateConverter):
        raise ValueError(
            f"The worker's data converter is a {type(converter).__name__}: AgentWorker stores conversation state as "
            "its own JSON text and needs AgentStateConverter. Create the worker with "
            "TaskHubGrpcWorker(..., **worker_options()) (from agent_host.worker)."
        )


def _is_scheduler_worker(worker: TaskHubGrpcWorker) -> bool:
    """Whether the worker talks to the Durable Task Scheduler, which caps entity ids at 100 characters."""
    try:
        from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker
    except ImportError:  # durabletask-azuremanaged not installed: not a scheduler worker
        return False
    return isinstance(worker, DurableTaskSchedulerWorker)
