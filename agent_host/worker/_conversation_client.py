"""The conversation client on a durabletask `TaskHubGrpcClient`: the same `ConversationClient` seam the Functions
host implements (`_conversation_client/durable_client.py`), so `take_turn` and the read model serve both hosts; and
the list of an agent's conversations, the task hub's entity query.

The gRPC client is synchronous: each call runs in a thread, off the event loop. A backend that cannot answer is
`storage_unavailable`, never a corrupt conversation. A caller watches no expiry here: each conversation entity
schedules its own idle checks (`_expiry.py`). Importing published conversations is not built on the worker
(docs/standalone-worker.md): no history is imported.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from durabletask.client import EntityQuery, TaskHubGrpcClient
from durabletask.entities import EntityInstanceId

from .._clock import Clock
from .._contract import RUN_OPERATION, AgentRoute
from .._conversation.state import decode_state
from .._conversation.view import ConversationView
from .._conversation_client.waits import ReadBackWaits
from .._errors import InvalidRequestError, StorageUnavailableError
from .._http.durable_queries import Page
from .._tracing import with_trace_context

# A page's continuation token: the last conversation id of the page before. Conversation ids are visible ASCII
# (CONVERSATION_ID_PATTERN), so the token is one too, as the list route requires.
_AFTER = "after:"


class DurableTaskConversationClient(ReadBackWaits):
    """One agent's conversations through a durabletask client: the `ConversationClient` of a standalone worker.

    Args:
        client: A `TaskHubGrpcClient` (or `DurableTaskSchedulerClient`) on the worker's task hub.
        agent: The agent whose conversations these are.
    """

    def __init__(self, client: TaskHubGrpcClient, agent: AgentRoute) -> None:
        self._client = client
        self._agent = agent

    @property
    def agent_name(self) -> str:
        """The agent whose conversations these are."""
        return self._agent.name

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Queue an operation on the conversation's entity (the backend delivers it at least once).

        Raises:
            StorageUnavailableError: the backend did not accept the signal.
        """
        if operation == RUN_OPERATION:
            payload = with_trace_context(payload)  # the turn's entity operation continues the caller's trace
        try:
            await asyncio.to_thread(self._client.signal_entity, self._entity(conversation_id), operation, payload)
        except grpc.RpcError as exc:
            raise StorageUnavailableError(f"the backend refused the signal: {_rpc_status(exc)}") from None

    async def read(self, conversation_id: str) -> ConversationView | None:
        """The conversation's validated state (a deleted one's tombstone included), or None when nothing is stored.

        Raises:
            StateCorruptError, StateVersionError: the stored state cannot be read; it is left untouched.
            StorageUnavailableError: the backend could not answer.
        """
        stored = await _stored_state(self._client, self._entity(conversation_id))
        # A signalled entity can exist before its first operation ran, with no state yet.
        return ConversationView(decode_state(stored)) if stored else None

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        """None: a worker's conversations are never imported from agent-framework-azurefunctions' entities."""
        return None

    async def may_hold_queued_turns(self, conversation_id: str) -> bool:
        """True: nothing on durabletask records that a turn was accepted before its entity first ran."""
        return True

    def watch_expiry(self, conversation_id: str, clock: Clock) -> NoExpiryWatch:
        """A watch that does nothing: on the worker the conversation's entity schedules its own idle checks, with the
        operation that created it, so a caller has nothing to start (`_expiry.py`)."""
        return NoExpiryWatch()

    def _entity(self, conversation_id: str) -> EntityInstanceId:
        return EntityInstanceId(self._agent.entity_name, conversation_id)


class TaskHubConversations:
    """Every agent's conversations through one durabletask client: the conversation client factory of the standalone
    worker's HTTP API, where Functions builds each from its durable client binding.

    Args:
        client: A `TaskHubGrpcClient` (or `DurableTaskSchedulerClient`) on the worker's task hub.
    """

    def __init__(self, client: TaskHubGrpcClient) -> None:
        self._client = client

    def for_agent(self, agent: AgentRoute) -> DurableTaskConversationClient:
        """The agent's conversations."""
        return DurableTaskConversationClient(self._client, agent)

    async def conversation_page(
        self, agent: AgentRoute, *, top: int, continuation_token: str | None, fetch_state: bool
    ) -> Page:
        """A page of the agent's conversations in id order, as the list route takes it (`ConversationPages`).

        durabletask 1.12's client has no call that answers one page of an entity query (`get_all_entities` follows
        every continuation token itself), so each page queries the ids of all the agent's entities, without state,
        and cuts the page from them; with `fetch_state`, the page's states are read one by one. An entity whose first
        operation is still queued is listed too (the query includes transient entities: durabletask's in-memory
        backend counts every entity with queued operations as one).

        Raises:
            InvalidRequestError: `continuation_token` is not one this method returned (`invalid_query`).
            StorageUnavailableError: the backend could not answer.
        """
        after = _after(continuation_token)
        query = EntityQuery(
            instance_id_starts_with=f"@{agent.entity_name}@", include_state=False, include_transient=True
        )
        try:
            found = await asyncio.to_thread(self._client.get_all_entities, query)
        except grpc.RpcError as exc:
            raise StorageUnavailableError(f"the backend could not list the conversations: {_rpc_status(exc)}") from None
        keys = sorted({metadata.id.key for metadata in found if metadata.id.entity == agent.entity_name})
        later = [key for key in keys if after is None or key > after]
        page = later[:top]
        items: list[dict[str, Any]] = [{"entityId": {"name": agent.entity_name, "key": key}} for key in page]
        if fetch_state:
            for item in items:
                item["state"] = await _stored_state(
                    self._client, EntityInstanceId(agent.entity_name, item["entityId"]["key"])
                )
        return Page(items, f"{_AFTER}{page[-1]}" if len(later) > top else None)


class NoExpiryWatch:
    """The expiry watch of a host whose conversations watch themselves: settling it does nothing."""

    async def finish(self, turn_count: int | None = None) -> None:
        """Nothing to settle."""


async def _stored_state(client: TaskHubGrpcClient, entity: EntityInstanceId) -> Any:
    """An entity's stored state as the backend keeps it (our JSON text), or None when it has none.

    Raises:
        StorageUnavailableError: the backend could not answer.
    """
    try:
        metadata = await asyncio.to_thread(client.get_entity, entity, True)
    except grpc.RpcError as exc:
        raise StorageUnavailableError(f"the backend could not read the conversation: {_rpc_status(exc)}") from None
    return metadata.get_state() if metadata is not None else None


def _after(continuation_token: str | None) -> str | None:
    """The conversation id a continuation token names, or None for the first page.

    Raises:
        InvalidRequestError: the token is not one `conversation_page` returned.
    """
    if continuation_token is None:
        return None
    if not continuation_token.startswith(_AFTER):
        raise InvalidRequestError(
            "The continuationToken is not one this list returned. Send none to start from the first page.",
            code="invalid_query",
        )
    return continuation_token.removeprefix(_AFTER)


def _rpc_status(exc: grpc.RpcError) -> str:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    return getattr(code, "name", type(exc).__name__)
