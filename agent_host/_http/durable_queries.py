"""Paged queries of the Durable Functions HTTP API that azure-functions-durable 1.x has no call for.

The extension answers `GET entities/{entityName}` (its entity query) and `GET instances` (its instance query) on the
same endpoint as every other client call, the binding's `rpcBaseUrl`; both page with the `x-ms-continuation-token`
header. The SDK offers neither with paging, so these send the requests themselves. A host that cannot answer is
`storage_unavailable` (503), as for every other durable client call; a query it refuses (400, a continuation token it
did not make) is the caller's `invalid_query`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import azure.durable_functions as df

from .._deps.durable_private import rpc_base_url
from .._errors import InvalidRequestError, StorageUnavailableError

CONTINUATION_HEADER = "x-ms-continuation-token"
_QUERY_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Page:
    """One page of a query: the items as the host answered them, and the token of the next page (None at the end)."""

    items: list[dict[str, Any]]
    continuation_token: str | None


async def list_entities(
    client: df.DurableOrchestrationClient,
    entity_name: str,
    *,
    top: int,
    continuation_token: str | None,
    fetch_state: bool = False,
) -> Page:
    """A page of the entities of one entity function, without their state unless `fetch_state`.

    Each item is `{"entityId": {"name", "key"}, "lastOperationTime"}` as the extension answers (the local host leaves
    `lastOperationTime` out: it does not record it), and `state` with `fetch_state`.

    Raises:
        StorageUnavailableError: the host could not be reached or did not answer with a page.
    """
    path = f"entities/{quote(entity_name.lower(), safe='')}"
    return await _page(client, path, {"top": top, "fetchState": "true" if fetch_state else "false"}, continuation_token)


async def list_instances(client: df.DurableOrchestrationClient, *, top: int, continuation_token: str | None) -> Page:
    """A page of the task hub's orchestration instances, without their inputs.

    Each item is the extension's status shape (`name`, `instanceId`, `runtimeStatus`, `customStatus`, `output`,
    `createdTime`, `lastUpdatedTime`). The query cannot filter by orchestrator name: callers filter the page.

    Raises:
        StorageUnavailableError: the host could not be reached or did not answer with a page.
    """
    return await _page(client, "instances", {"top": top, "showInput": "false"}, continuation_token)


async def _page(
    client: df.DurableOrchestrationClient, path: str, params: dict[str, Any], continuation_token: str | None
) -> Page:
    # The binding's RPC base URL is where the SDK sends its own calls.
    url = f"{rpc_base_url(client)}{path}?{urlencode(params)}"
    headers = {CONTINUATION_HEADER: continuation_token} if continuation_token else {}
    timeout = aiohttp.ClientTimeout(total=_QUERY_TIMEOUT_SECONDS)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, headers=headers) as response,
        ):
            if response.status == 400:
                # A continuation token the host did not make (or no longer reads): the caller's to fix.
                raise InvalidRequestError(
                    f"The durable host refused the query of {path} (400): the continuationToken is not one it "
                    "returned. Send none to start from the first page.",
                    code="invalid_query",
                )
            if response.status != 200:
                raise StorageUnavailableError(f"the durable host answered {response.status} to a query of {path}")
            body = await response.json(content_type=None)
            token = response.headers.get(CONTINUATION_HEADER)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        problem = type(exc).__name__
        raise StorageUnavailableError(f"the durable host could not answer a query of {path}: {problem}") from None
    if not isinstance(body, list):
        kind = type(body).__name__
        raise StorageUnavailableError(f"the durable host answered a query of {path} with {kind}, not a list")
    # The last page may still carry the header, empty or "null": either means there is no next page.
    return Page([item for item in body if isinstance(item, dict)], token if token and token != "null" else None)
