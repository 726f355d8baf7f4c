"""AgentFunctionApp: a DFApp that registers, for each agent, one conversation entity, plus the shared HTTP routes.

Registration only: the route table (`_route_table`) declares every HTTP route (path, methods and handlers together,
each handler in `_http/` or `_inspector/`), every entity is one call into `_conversation/entity.py`, every MCP tool
one call into `_mcp/`.
"""

from __future__ import annotations

import datetime
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from agent_framework import SupportsAgentRun, Workflow

from ._agent_names import entity_name_for, hosted_agent_name, is_repeated_registration
from ._clock import SYSTEM_CLOCK, Clock
from ._contract import AgentRoute
from ._conversation.entity import ConversationEntityFunction
from ._conversation.history_plan import plan_history
from ._conversation.sessions import core_state_types, register_state_types
from ._conversation.state_cache import CONVERSATION_CACHE, MB
from ._conversation_client.client import ConversationClient
from ._conversation_client.durable_client import DurableConversationClient
from ._conversation_client.in_flight import TurnsInFlight
from ._expiry.functions import ExpiryFunctions
from ._hosted_agents import AgentOptions, conversation_entity, hosted_agent
from ._http import classic_functions
from ._http.agent_routes import CONVERSATION_ROUTE, conversation_list_route, conversation_routes, openai_routes
from ._http.conversation_list import ConversationListRoute
from ._http.openai_responses import OpenAIResponsesRoutes
from ._http.route_table import HttpRoute
from ._http.routes import HealthRoute, Routes
from ._http.workflow_routes import WorkflowRoutes
from ._inspector.routes import InspectorRoutes
from ._inspector.settings import inspector_from_settings
from ._mcp import (
    McpTool,
    McpToolRegistry,
    agent_tool,
    require_result_schema_support,
    run_agent_tool,
    run_workflow_tool,
    workflow_input,
    workflow_tool,
)
from ._orchestrations.agent import OrchestrationAgent, orchestration_agent
from ._owners import OwnerHook, owners_of
from ._published_state import published_entity_name
from ._retention_settings import RetentionModeName
from ._settings import HostSettings
from ._streaming.callbacks import AgentResponseCallbackProtocol
from ._streaming.channel import TurnStreamStore
from ._streaming.store_source import app_stream_store
from ._tracing import configure_exporters
from ._workflows.contract import WorkflowRoute
from ._workflows.functions import WorkflowFunctions, with_sub_workflows
from ._workflows.registration import WorkflowRetryPolicy

logger = logging.getLogger("agent_host.app")

# agent-framework-azurefunctions' defaults: a `/run` waits up to 30 x 1 s for its answer.
DEFAULT_MAX_POLL_RETRIES = 30
DEFAULT_POLL_INTERVAL_SECONDS = 1.0
# Every route takes every method, so the app itself answers a wrong one: 405 with an honest Allow (or, for
# OPTIONS, 204 with Allow), in the JSON error body, on the local host and on Azure alike.
_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class AgentFunctionApp(df.DFApp):
    """A Durable Functions app that hosts Agent Framework agents as durable conversations.

    Each agent gets one entity function whose key is the conversation id; the HTTP routes signal that
    entity and read the turn's result back. The agents are used as they are: each turn runs on a shallow
    copy, so the objects passed in are never mutated. The positional parameters are those of
    agent-framework-azurefunctions' `AgentFunctionApp`, with the same meaning (docs/migrating.md).

    Args:
        agents: The agents to host. Each needs a unique `name` (letters, digits, `_`, `-`).
        workflow: One Agent Framework workflow to host (the same as `workflows=[workflow]`; both may be given).
        workflows: Workflows to host, a list or a `{Workflow.name: workflow}` mapping, each under
            `/api/workflows/{Workflow.name}/...` (see `add_workflow`).
        http_auth_level: Authorization level of every route except `/health` (function keys by default).
        enable_health_check: Serve `GET /api/health`.
        enable_http_endpoints: Serve the agents' `/api/agents/{name}/...` routes; `add_agent(...,
            enable_http_endpoint=...)` decides per agent. An agent without them is still callable from orchestrations
            and as an MCP tool.
        max_poll_retries: With `poll_interval_seconds`, how long `POST /api/agents/{name}/run` and an agent's MCP
            tool call wait for the answer: `max_poll_retries * poll_interval_seconds` seconds (the host does not
            poll at that interval; it reads the conversation with a short, growing one). When neither is given the
            wait is `AGENT_HOST_WAIT_SECONDS` (30 s by default, the same as that host's 30 x 1 s).
        poll_interval_seconds: See `max_poll_retries`.
        enable_mcp_tool_trigger: Expose every agent and every workflow as an MCP tool (the Functions MCP
            extension's `mcpToolTrigger`); `add_agent(...)` and `add_workflow(..., enable_mcp_tool_trigger=...)`
            decide per agent and per workflow. See docs/mcp.md.
        default_callback: Called with each update and the answer of every turn of agents without a callback of
            their own, workflow agent nodes included (agent-framework-azurefunctions' callback protocol).
        settings: Limits and defaults; read from app settings when omitted.
        state_types: Classes your context providers keep in session state, registered so they come back as
            their classes after a cold start (core's own state types are registered for you).
        clock: Where wall-clock time comes from (records, TTLs, turn ids); the system clock by default.
        inspector: Serve the inspector page at `/api/inspector` (behind the function key like every route); None
            reads the `AGENT_HOST_INSPECTOR` app setting (off unless set; `python -m agent_host serve` sets it).
            See docs/inspector.md.
        http_streams: Serve HTTP functions through Azure Functions' HTTP streams (FastAPI request and response types,
            needs azurefunctions-extensions-http-fastapi and `PYTHON_ENABLE_INIT_INDEXING=1`), so event streams are
            sent as they are produced; without, an event stream is sent whole when it ends. See docs/streaming.md.
        stream_store: Where turn streams live; by default the store the app settings name, resolved when first
            needed (`python -m agent_host serve` names a local one).
        import_published: On the first turn here of a conversation agent-framework-azurefunctions kept (its
            `dafx-{agent}` entity under the same id), start from its history (docs/migrating.md). The published
            entity is only read.
        conversation_owners: Give each conversation an owner, and let a caller reach only its own (another's is 404,
            a request naming nobody 401): True takes the principal App Service authentication passes
            (`X-MS-CLIENT-PRINCIPAL-ID`), a callable names it from the request's headers (lower-case names; None
            for nobody). Requests with the `AGENT_HOST_ADMIN_KEY` key reach every conversation (docs/security.md).

    Raises:
        ValueError: an agent has no name, an invalid one, or one already registered for another agent; a workflow
            cannot be hosted, or a `workflows` key is not its workflow's name; `max_poll_retries` or
            `poll_interval_seconds` is not a positive number.
        ImportError: `http_streams` without azurefunctions-extensions-http-fastapi installed.
    """

    def __init__(
        self,
        agents: Sequence[SupportsAgentRun] | None = None,
        workflow: Workflow | None = None,
        workflows: Sequence[Workflow] | Mapping[str, Workflow] | None = None,
        http_auth_level: func.AuthLevel | str = func.AuthLevel.FUNCTION,
        enable_health_check: bool = True,
        enable_http_endpoints: bool = True,
        max_poll_retries: int | None = None,
        poll_interval_seconds: float | None = None,
        enable_mcp_tool_trigger: bool = False,
        default_callback: AgentResponseCallbackProtocol | None = None,
        *,
        settings: HostSettings | None = None,
        state_types: Sequence[type] = (),
        clock: Clock = SYSTEM_CLOCK,
        inspector: bool | None = None,
        http_streams: bool = False,
        stream_store: TurnStreamStore | None = None,
        import_published: bool = False,
        conversation_owners: bool | OwnerHook = False,
    ) -> None:
        super().__init__(http_auth_level=http_auth_level)
        self.import_published = import_published
        self.conversation_owners = owners_of(conversation_owners)
        self.clock = clock
        self.enable_health_check = bool(enable_health_check)
        self.enable_http_endpoints = bool(enable_http_endpoints)
        self.enable_mcp_tool_trigger = enable_mcp_tool_trigger
        self.mcp_tools = McpToolRegistry()
        register_state_types([*core_state_types(), *state_types])
        self.settings = settings or HostSettings.from_environment()
        CONVERSATION_CACHE.resize(self.settings.state_cache_mb * MB)
        # Exporters as the environment asks (Azure Monitor, OTLP, console), once per process; none by default.
        configure_exporters()
        self.max_poll_retries, self.poll_interval_seconds, self._poll_wait = _poll_wait(
            max_poll_retries, poll_interval_seconds, self.settings
        )
        self.http_streams = http_streams
        self.default_callback = default_callback
        self._http_functions = _function_shape(http_streams)
        self._stream_store = app_stream_store(stream_store, self.settings.turn_record_ttl_seconds)
        # Every agent an orchestration can call (workflow agent nodes too, as `{workflow}-{executorId}`), and the
        # ones whose `/api/agents/{name}/...` routes are served.
        self._agent_routes: dict[str, AgentRoute] = {}
        self._http_agent_routes: dict[str, AgentRoute] = {}
        self._entities: dict[str, ConversationEntityFunction] = {}
        self._expiry = ExpiryFunctions(self)
        self._workflows = WorkflowFunctions(
            self,
            self._node_entity,
            self.settings.run_timeout_seconds,
            conversation_ttl_seconds=self.settings.conversation_ttl_seconds,
        )
        self.inspector = inspector_from_settings() if inspector is None else inspector
        for route in self._route_table(clock):
            self._register_http(route)
        # Workflows first, then agents, as agent-framework-azurefunctions registers them.
        for hosted in _workflows_to_host(workflow, workflows):
            self.add_workflow(hosted)
        for agent in agents or ():
            self.add_agent(agent)

    @property
    def agents(self) -> dict[str, SupportsAgentRun]:
        """The agents registered with `add_agent`, by name (workflow agent nodes are not listed)."""
        return {name: entity.agent for name, entity in self._entities.items()}

    @property
    def workflows(self) -> dict[str, Workflow]:
        """The hosted workflows by name (a copy)."""
        return {name: route.workflow for name, route in self._workflows.routes.items()}

    @property
    def workflow(self) -> Workflow | None:
        """The hosted workflow when exactly one is hosted, else None (as agent-framework-azurefunctions has it)."""
        hosted = list(self._workflows.routes.values())
        return hosted[0].workflow if len(hosted) == 1 else None

    def _workflow_names(self) -> list[str]:
        return list(self._workflows.routes)

    def add_agent(
        self,
        agent: SupportsAgentRun,
        callback: AgentResponseCallbackProtocol | None = None,
        enable_http_endpoint: bool | None = None,
        enable_mcp_tool_trigger: bool | None = None,
        *,
        entity_id: str | None = None,
        retention_mode: RetentionModeName | None = None,
        max_state_bytes: int | None = None,
        state_types: Sequence[type] = (),
        conversation_ttl: datetime.timedelta | float | None = None,
        approval_ttl: datetime.timedelta | float | None = None,
        checkpoints: bool | None = None,
    ) -> None:
        """Register an agent: its conversation entity, reachable under `/api/agents/{name}/...`.

        Registering the same agent object under the same name again does nothing but log a warning (as
        agent-framework-azurefunctions skips it); another agent under a taken name is refused.

        Args:
            agent: The agent; it needs a unique `name`.
            callback: Called with each update and the answer of every turn of this agent (its turns then run
                streaming); the app's `default_callback` otherwise.
            enable_http_endpoint: Serve this agent's `/api/agents/{name}/...` routes; None follows the app's
                `enable_http_endpoints`. Without them the agent answers 404 there but stays callable from
                orchestrations and as an MCP tool.
            enable_mcp_tool_trigger: Expose this agent as an MCP tool; None follows the app's setting.
            entity_id: The name to register the agent under (routes, MCP tool, health) instead of `agent.name`.
            retention_mode: This agent's default retention mode (the app setting otherwise).
            max_state_bytes: This agent's default byte budget per conversation.
            state_types: Session state classes this agent's providers use (see `AgentFunctionApp`).
            conversation_ttl: How long this agent's conversations may stay idle before they are deleted (a
                `timedelta` or seconds; 0 never); None follows `AGENT_HOST_CONVERSATION_TTL`.
            approval_ttl: How long a tool approval this agent asks for waits for its answer (a `timedelta` or
                seconds, at most a year); once it has passed, the conversation's next turn declines it. None or 0:
                approvals wait until answered. A turn's `approvalTtlSeconds` overrides it
                (docs/sessions-and-approvals.md).
            checkpoints: Journal each model response and tool result of this agent's turns, so a turn re-run after
                a crash repeats at most the step in flight; None follows `AGENT_HOST_CHECKPOINTS` (on).

        Raises:
            ValueError: the name is missing, invalid or taken by another agent, a state type's id is taken, or a
                retention value, the TTL or the approval TTL is invalid (the message names the parameter).
            RuntimeError: an MCP tool is asked for with an azure-functions older than 1.26.
        """
        register_state_types(state_types)
        name, id_limit = hosted_agent_name(
            agent, entity_id, durable_task_scheduler=self.settings.durable_task_scheduler
        )
        known = self._entities.get(name)
        if is_repeated_registration(name, agent, known.agent if known else None, self._agent_routes):
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
        http_enabled = self.enable_http_endpoints if enable_http_endpoint is None else bool(enable_http_endpoint)
        mcp_enabled = self.enable_mcp_tool_trigger if enable_mcp_tool_trigger is None else bool(enable_mcp_tool_trigger)
        tool = None
        if mcp_enabled:
            require_result_schema_support()
            tool = self.mcp_tools.add(agent_tool(name, getattr(agent, "description", None)))
        entity_name = entity_name_for(name)
        self._register_entity(entity_name, entity)
        self._entities[name] = entity
        self._expiry.set_ttl(entity_name, ttl)
        route = AgentRoute(
            name=name,
            entity_name=entity_name,
            history=plan.owner,
            conversation_ttl_seconds=ttl,
            max_conversation_id_length=id_limit,
            agent_type=type(agent).__name__,
            http_enabled=http_enabled,
            mcp_enabled=mcp_enabled,
            published_entity=published_entity_name(name) if self.import_published else None,
            owners=self.conversation_owners,
        )
        self._agent_routes[name] = route
        if http_enabled:
            self._http_agent_routes[name] = route
        if tool is not None:
            self._register_agent_tool(tool, route)

    def close(self) -> None:
        """Release what the app opened itself: the turn stream store its settings chose, and that store's network
        client. A store passed as `stream_store=` stays open (it is yours). The local host calls this when it stops;
        on Azure the worker process ends instead. A later streamed turn opens the store again."""
        self._stream_store.close()

    def get_agent(
        self, context: df.DurableOrchestrationContext, agent_name: str, workflow_name: str | None = None
    ) -> OrchestrationAgent:
        """A registered agent for use inside an orchestrator function (as in agent-framework-azurefunctions).

        `agent.create_session()` starts a conversation (`session_id=...` joins one the HTTP API serves);
        `yield agent.run("...", session=session)` takes a turn in it and gives an `AgentResponse`. With
        `workflow_name`, `agent_name` is the executor id of one of that hosted workflow's agent nodes.

        Raises:
            ValueError: no agent of that name is registered.
        """
        name = f"{workflow_name}-{agent_name}" if workflow_name is not None else str(agent_name)
        return orchestration_agent(context, self._agent_routes, name)

    def add_workflow(
        self,
        workflow: Workflow,
        *,
        retry: WorkflowRetryPolicy | None = None,
        enable_mcp_tool_trigger: bool | None = None,
    ) -> None:
        """Host a workflow as built (nothing in it changes), under `/api/workflows/{workflow.name}/runs`.

        Args:
            workflow: A core `Workflow`; its agent nodes take their turns on conversation entities.
            retry: Retries of a failed executor activity or agent turn, with a durable backoff.
            enable_mcp_tool_trigger: Expose this workflow as an MCP tool; None follows the app's setting.

        Raises:
            ValueError: the name is invalid or taken (as a workflow, or as an MCP tool), or the workflow uses a
                feature a replayed orchestration cannot run (the message names it).
            RuntimeError: an MCP tool is asked for with an azure-functions older than 1.26.
        """
        expose = self.enable_mcp_tool_trigger if enable_mcp_tool_trigger is None else enable_mcp_tool_trigger
        if expose:
            require_result_schema_support()
            self.mcp_tools.require_free(workflow.name)
        hosted = self._workflows.add(workflow, retry)
        for plan in with_sub_workflows(hosted):
            for executor_id, node in plan.agent_nodes.items():
                self._add_node_route(f"{plan.name}-{executor_id}", node.entity_name, node.executor.agent)
        if expose:
            self._register_workflow_tool(self._workflows.routes[workflow.name])

    def _add_node_route(self, name: str, entity_name: str, agent: SupportsAgentRun) -> None:
        """Make a workflow agent node callable from orchestrations as `get_agent(context, executor_id, workflow)`."""
        known = self._agent_routes.get(name)
        if known is not None and known.entity_name == entity_name:
            return  # a sub-workflow hosted by two workflows: one node
        if any(other.lower() == name.lower() for other in self._agent_routes):
            raise ValueError(
                f"Workflow agent node {name!r} has the name of an agent registered on this app; rename the agent, "
                "the workflow or the executor."
            )
        self._agent_routes[name] = AgentRoute(
            name=name,
            entity_name=entity_name,
            history=plan_history(agent).owner,
            conversation_ttl_seconds=self.settings.conversation_ttl_seconds,
            agent_type=type(agent).__name__,
            http_enabled=False,
        )

    def _node_entity(self, entity_name: str, agent: SupportsAgentRun) -> ConversationEntityFunction:
        """The conversation entity of a workflow's agent node: named for the node, so sessions keep nodes apart."""
        self._expiry.set_ttl(entity_name, self.settings.conversation_ttl_seconds)
        return conversation_entity(
            entity_name,
            agent,
            settings=self.settings,
            clock=self.clock,
            stream_store=self._stream_store,
            # As agent-framework-azurefunctions: the app's default callback watches the nodes' turns too.
            callback=self.default_callback,
        )

    def _register_entity(self, entity_name: str, entity: ConversationEntityFunction) -> None:
        def conversation_entity(context: df.DurableEntityContext) -> None:
            entity(context)

        conversation_entity.__name__ = entity_name
        self.function_name(entity_name)(
            self.entity_trigger(context_name="context", entity_name=entity_name)(conversation_entity)
        )

    def _register_agent_tool(self, tool: McpTool, agent: AgentRoute) -> None:
        settings, clock = self.settings, self.clock
        # No 202 in MCP: by default a call waits as long as any HTTP request may.
        wait = self._poll_wait if self._poll_wait is not None else settings.max_wait_seconds
        in_flight = TurnsInFlight(self._stream_store, settings, clock)

        async def mcp_tool(context: str, client: df.DurableOrchestrationClient) -> str:
            conversations = self._conversation_client(client, agent)
            return await run_agent_tool(context, conversations, agent, settings, clock, wait, in_flight)

        self._register_tool_function(tool, mcp_tool)

    def _register_workflow_tool(self, route: WorkflowRoute) -> None:
        shape = workflow_input(route.name, route.workflow.get_start_executor().input_types)
        tool = self.mcp_tools.add(workflow_tool(route.name, route.workflow.description, shape.tool_property()))
        settings = self.settings

        async def mcp_tool(context: str, client: df.DurableOrchestrationClient) -> str:
            return await run_workflow_tool(context, client, route, shape, settings)

        self._register_tool_function(tool, mcp_tool)

    def _register_tool_function(self, tool: McpTool, mcp_tool: Callable[..., Awaitable[str]]) -> None:
        mcp_tool.__name__ = tool.function_name
        with_client = self.durable_client_input(client_name="client")(mcp_tool)
        self.function_name(tool.function_name)(self.mcp_tool_trigger(**tool.trigger_arguments())(with_client))

    def _conversation_client(self, binding: df.DurableOrchestrationClient, agent: AgentRoute) -> ConversationClient:
        """The agent's conversations through the durable client binding a trigger was given: the one factory every
        front end (the routes, `/run`, AG-UI, Responses, the inspector and MCP tools) builds its per-request client
        with, so a test may substitute it."""
        return DurableConversationClient(binding, agent)

    def _route_table(self, clock: Clock) -> list[HttpRoute]:
        """Every HTTP route the app serves, in registration order: path, methods and handlers together."""
        factory = self._conversation_client
        conversations = Routes(
            self._http_agent_routes,
            self.settings,
            clock,
            self._stream_store,
            conversations=factory,
            run_wait=self._poll_wait,
        )
        workflows = WorkflowRoutes(self._workflows.routes, self.settings)
        listing = ConversationListRoute(self._http_agent_routes)
        conversation, runs, published = CONVERSATION_ROUTE, "workflows/{workflow}/runs", "workflow/{workflow}"
        table: list[HttpRoute] = []
        if self.enable_health_check:
            health = HealthRoute(self._agent_routes, self._workflow_names)
            anonymous = func.AuthLevel.ANONYMOUS
            table.append(HttpRoute("api_health", "health", {"GET": health.health}, client=False, auth_level=anonymous))
        table += conversation_routes(conversations)
        table += [
            HttpRoute("api_workflow_runs", runs, {"POST": workflows.runs}),
            HttpRoute("api_workflow_run", f"{runs}/{{runId}}", {"GET": workflows.run}),
            HttpRoute(
                "api_workflow_response", f"{runs}/{{runId}}/responses/{{requestId}}", {"POST": workflows.response}
            ),
            HttpRoute("api_workflow_published_run", f"{published}/run", {"POST": workflows.compat_run}),
            HttpRoute(
                "api_workflow_published_status", f"{published}/status/{{instanceId}}", {"GET": workflows.compat_status}
            ),
            HttpRoute(
                "api_workflow_published_respond",
                f"{published}/respond/{{instanceId}}/{{requestId}}",
                {"POST": workflows.compat_respond},
            ),
            conversation_list_route(listing),
        ]
        table += openai_routes(OpenAIResponsesRoutes(self._http_agent_routes, self.settings, clock, conversations))
        if self.inspector:
            inspector = InspectorRoutes(self._http_agent_routes, self._workflows.routes, self.clock, factory)
            table += [
                HttpRoute("api_inspector", "inspector", {"GET": inspector.page}, client=False),
                HttpRoute("api_inspector_app", "inspector/app", {"GET": inspector.hosted}, client=False),
                HttpRoute("api_inspector_conversation", f"inspector/{conversation}", {"GET": inspector.conversation}),
                HttpRoute("api_inspector_runs", "inspector/workflows/{workflow}/runs", {"GET": inspector.runs}),
            ]
        return table

    def _register_http(self, route: HttpRoute) -> None:
        """Register the HTTP function of `route`, in the shape the app serves: every HTTP function of an app must
        share it."""
        shape = self._http_functions
        function = shape.client_http_function(route.endpoint) if route.client else shape.http_function(route.endpoint)
        function.__name__ = function.__qualname__ = route.name
        if route.client:
            function = self.durable_client_input(client_name="client")(function)
        function = self.route(route=route.path, methods=_ALL_METHODS, auth_level=route.auth_level)(function)
        self.function_name(route.name)(function)


def _poll_wait(
    max_poll_retries: Any, poll_interval_seconds: Any, settings: HostSettings
) -> tuple[int, float, float | None]:
    """The published host's poll parameters, checked, and how long `/run` and MCP agent tools wait for an answer
    (None when neither is given: each then waits as it does by default).

    Raises:
        ValueError: a value that is not a number, fewer than 1 retry, or an interval that is not above 0.
    """
    retries = DEFAULT_MAX_POLL_RETRIES if max_poll_retries is None else _number(max_poll_retries, "max_poll_retries")
    interval = (
        DEFAULT_POLL_INTERVAL_SECONDS
        if poll_interval_seconds is None
        else _number(poll_interval_seconds, "poll_interval_seconds")
    )
    if retries < 1 or retries != int(retries):
        raise ValueError(f"max_poll_retries must be a whole number of at least 1, got {max_poll_retries!r}.")
    if not 0 < interval < math.inf:
        raise ValueError(f"poll_interval_seconds must be a number above 0, got {poll_interval_seconds!r}.")
    if max_poll_retries is None and poll_interval_seconds is None:
        return int(retries), interval, None
    wait = retries * interval
    if wait > settings.max_wait_seconds:
        # Nothing is lost by waiting less: a turn still running when the wait ends answers 202 with its Location.
        logger.warning(
            "max_poll_retries * poll_interval_seconds is %g s, over AGENT_HOST_MAX_WAIT_SECONDS (%g s): /run and MCP "
            "agent tools wait %g s, then answer that the turn is still running.",
            wait,
            settings.max_wait_seconds,
            settings.max_wait_seconds,
        )
        wait = settings.max_wait_seconds
    return int(retries), interval, wait


def _number(value: Any, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}.") from None


def _workflows_to_host(
    workflow: Workflow | None, workflows: Sequence[Workflow] | Mapping[str, Workflow] | None
) -> list[Workflow]:
    """`workflow` and `workflows` as one list; a mapping's keys must be the workflows' names.

    Raises:
        ValueError: a mapping key that is not its workflow's `name`.
    """
    hosted = [workflow] if workflow is not None else []
    if isinstance(workflows, Mapping):
        for key, value in workflows.items():
            if key != value.name:
                raise ValueError(f"workflows mapping key {key!r} does not match Workflow.name {value.name!r}.")
            hosted.append(value)
    else:
        hosted.extend(workflows or ())
    return hosted


def _function_shape(http_streams: bool) -> ModuleType:
    """The module that makes HTTP functions in the shape the app serves."""
    if not http_streams:
        return classic_functions
    try:
        # Imported only when asked for: importing it turns HTTP streams on for every HTTP function of the process.
        from ._http import fastapi_functions
    except ImportError as exc:
        raise ImportError(
            "AgentFunctionApp(http_streams=True) needs azurefunctions-extensions-http-fastapi: add it to "
            f"requirements.txt and install it ({exc})."
        ) from exc
    return fastapi_functions
