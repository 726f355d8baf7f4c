"""`GET /api/agents/{agent}/conversations`: an agent's conversations, a page at a time.

Each conversation is an entity of the agent's entity function, so the list is the durable host's entity query of
that function (`durable_queries.list_entities` on Functions; a host's own `ConversationPages` elsewhere). It lists
ids only: reading every conversation's state to describe it would cost a full read each; with owners on, the page is
read with its states, to keep the caller's own. Knows the route's contract, not how conversations are stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import azure.durable_functions as df
import azure.functions as func

from .._contract import AgentRoute
from .._conversation.state import decode_state
from .._conversation.view import ConversationView
from .._conversation_client.owners import caller_of
from .._errors import AgentHostError, AgentNotFoundError
from .durable_queries import Page, list_entities
from .paging import PageQuery
from .requests import query
from .responses import json_response


@runtime_checkable
class ConversationPages(Protocol):
    """A host's entity query of an agent's conversations, on a host without the Functions durable client (the
    standalone worker's HTTP API)."""

    async def conversation_page(
        self, agent: AgentRoute, *, top: int, continuation_token: str | None, fetch_state: bool
    ) -> Page:
        """A page of the agent's conversation entities, each item `{"entityId": {"name", "key"}}` (and `state` with
        `fetch_state`), as `list_entities` answers; raises `InvalidRequestError` (`invalid_query`) for a token it
        did not make."""
        ...


class ConversationListRoute:
    """The handler of the conversation list; reads the app's registered agents."""

    def __init__(self, agents: Mapping[str, AgentRoute]) -> None:
        self._agents = agents

    async def conversations(
        self, req: func.HttpRequest, client: df.DurableOrchestrationClient | ConversationPages
    ) -> func.HttpResponse:
        """`GET /api/agents/{agent}/conversations[?top=N&continuationToken=...]`."""
        name = req.route_params.get("agent", "")
        agent = self._agents.get(name)
        if agent is None:
            raise AgentNotFoundError(name[:80], sorted(self._agents))
        caller = caller_of(agent.owners, req.headers, req.params)
        owner = caller.owner if caller is not None else None
        page_query = query(req, PageQuery)
        top, token, with_state = page_query.top, page_query.continuation_token, owner is not None
        if isinstance(client, ConversationPages):
            page = await client.conversation_page(agent, top=top, continuation_token=token, fetch_state=with_state)
        else:
            page = await list_entities(
                client, agent.entity_name, top=top, continuation_token=token, fetch_state=with_state
            )
        items = [item for item in page.items if isinstance(item.get("entityId"), dict)]
        if owner is not None:
            # A page may then hold fewer than `top`: the query cannot filter by owner, so the page is filtered.
            items = [item for item in items if _owner_of(item.get("state")) == owner]
        conversations = [_listed(item) for item in items]
        body = {"agent": agent.name, "conversations": conversations, "continuationToken": page.continuation_token}
        return json_response(200, body)


def _owner_of(stored: Any) -> str | None:
    """The owner of a listed conversation's state; None when it has none, or it cannot be read."""
    if stored is None:
        return None
    try:
        return ConversationView(decode_state(stored)).owner
    except AgentHostError:
        return None


def _listed(item: dict[str, Any]) -> dict[str, Any]:
    """One listed entity as a conversation: its id, and when it last ran an operation if the host says."""
    listed: dict[str, Any] = {"conversationId": item["entityId"].get("key")}
    if item.get("lastOperationTime"):
        listed["lastOperationTime"] = item["lastOperationTime"]
    return listed
