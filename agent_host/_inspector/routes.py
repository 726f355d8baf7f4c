"""The inspector's routes: its page, what the app hosts, one conversation as a whole, and a workflow's runs.

Registered only when the inspector is on; everything else the page shows comes from the app's ordinary routes.
Handlers raise `AgentHostError`s; the app's route table serves each on its path and method and renders what they
raise, as on every route.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from .._clock import Clock
from .._contract import AgentRoute, validate_conversation_id
from .._conversation_client.client import ConversationClientFactory
from .._errors import AgentNotFoundError, ConversationNotFoundError, WorkflowNotFoundError
from .._http.durable_queries import list_instances
from .._http.paging import PageQuery
from .._http.requests import RequestConversations, query
from .._http.responses import json_response
from .._workflows.contract import STATUS_KEY, WAITING_FOR_INPUT, WorkflowRoute
from .page import inspector_page
from .views import render_deleted, render_inspection

# A workflow's runs are found by reading the task hub's instances, which the host cannot filter by orchestrator:
# one request reads at most this many pages before it answers with what it found and where to go on.
MAX_PAGES_PER_RUN_LIST = 5
_RUNTIME_STATUS = {"Completed": "completed", "Failed": "failed", "Terminated": "terminated", "Canceled": "terminated"}


class InspectorRoutes:
    """The inspector's handlers; they read the app's registered agents and workflows as they are added, and reach a
    conversation through the app's conversation client factory (`conversations`)."""

    def __init__(
        self,
        agents: Mapping[str, AgentRoute],
        workflows: Mapping[str, WorkflowRoute],
        clock: Clock,
        conversations: ConversationClientFactory,
    ) -> None:
        self._conversations = RequestConversations(conversations)
        self._agents = agents
        self._workflows = workflows
        self._clock = clock

    async def page(self, req: func.HttpRequest) -> func.HttpResponse:
        """`GET /api/inspector`: the page."""
        page = inspector_page()
        return func.HttpResponse(
            page.html, status_code=200, mimetype="text/html", charset="utf-8", headers=page.headers
        )

    async def hosted(self, req: func.HttpRequest) -> func.HttpResponse:
        """`GET /api/inspector/app`: the agents and workflows the app hosts."""
        agents = [{"name": route.name, "history": route.history} for route in self._agents.values()]
        workflows = [{"name": name} for name in self._workflows]
        return json_response(200, {"agents": agents, "workflows": workflows})

    async def conversation(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET /api/inspector/agents/{agent}/conversations/{conversationId}`: the conversation from one read."""
        name = req.route_params.get("agent", "")
        agent = self._agents.get(name)
        if agent is None:
            raise AgentNotFoundError(name[:80], sorted(self._agents))
        conversation_id = validate_conversation_id(req.route_params.get("conversationId", ""), agent)
        state = await self._conversations(req, client, agent).read(conversation_id)
        if state is None:
            raise ConversationNotFoundError(agent.name, conversation_id)
        if state.deleted is not None:  # the tombstone is what the host holds: show it, rather than "not found"
            return json_response(200, render_deleted(conversation_id, state.deleted))
        return json_response(200, render_inspection(agent, conversation_id, state, self._clock.now_ms()))

    async def runs(self, req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        """`GET /api/inspector/workflows/{workflow}/runs[?top=N&continuationToken=...]`: a workflow's runs."""
        name = req.route_params.get("workflow", "")
        workflow = self._workflows.get(name)
        if workflow is None:
            raise WorkflowNotFoundError(name[:80], sorted(self._workflows))
        page_query = query(req, PageQuery)
        token = page_query.continuation_token
        runs: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES_PER_RUN_LIST):
            page = await list_instances(client, top=page_query.top, continuation_token=token)
            runs.extend(_run(item) for item in page.items if item.get("name") == workflow.orchestrator_name)
            token = page.continuation_token
            if token is None or len(runs) >= page_query.top:
                break
        return json_response(200, {"workflow": workflow.name, "runs": runs, "continuationToken": token})


def _run(status: dict[str, Any]) -> dict[str, Any]:
    """A run as listed: its status from the instance's own status (`GET .../runs/{runId}` also reads sub-workflows)."""
    runtime = status.get("runtimeStatus")
    custom = status.get("customStatus")
    waiting = isinstance(custom, dict) and custom.get(STATUS_KEY) == WAITING_FOR_INPUT
    return {
        "runId": status.get("instanceId"),
        "status": _RUNTIME_STATUS.get(str(runtime), WAITING_FOR_INPUT if waiting else "running"),
        "runtimeStatus": runtime,
        "createdTime": status.get("createdTime"),
        "lastUpdatedTime": status.get("lastUpdatedTime"),
    }
