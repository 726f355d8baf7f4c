"""The slice of the Durable Functions HTTP webhook API that the durable client uses.

``DurableOrchestrationClient.signal_entity`` posts to ``entities/{name}/{key}?op=...`` and ``read_entity_state`` gets
``entities/{name}/{key}``; both arrive here under ``/runtime/webhooks/durabletask/``. ``GET entities/{name}`` lists an
entity function's entities a page at a time, as the extension's entity query does (the SDK has no call for it; the app
sends it itself). The orchestration routes
(``orchestrators/...``, ``instances/...``) are handed to ``orchestration_api``. The app's client reaches this API on a
loopback-only listener of its own (its ``rpcBaseUrl``); the public port forwards here only requests with the key.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging

from aiohttp import web

from .errors import error_response
from .listener import read_body
from .log_text import entity_label, loggable
from .orchestration_api import ORCHESTRATION_SEGMENTS, OrchestrationWebhookApi
from .request_media import non_json_problem
from .route_template import split_path
from .scheduler import EntityScheduler
from .store import EntityStore, StorageError

logger = logging.getLogger(__name__)

WEBHOOK_SEGMENTS: tuple[str, ...] = ("runtime", "webhooks", "durabletask")
"""Path segments (after the host) under which the webhook API lives."""

ENTITY_PAGE_SIZE = 100
"""Entities per page of ``GET entities/{name}`` when ``top`` is not given: the extension's ``EntityQuery`` default."""


class DurableWebhookApi:
    """Serves entity signals (enqueue durably, then schedule) and entity state reads of the app's entities.

    Like the real host's local RPC endpoint, :meth:`serve` is meant for a listener bound to loopback only: the durable
    client in the app's own functions is its only intended caller, and it carries no key.
    """

    def __init__(
        self,
        store: EntityStore,
        scheduler: EntityScheduler,
        orchestrations: OrchestrationWebhookApi | None = None,
    ) -> None:
        """Bind the API to the store it writes to and the scheduler it wakes.

        Args:
            store: Entity states and pending signals.
            scheduler: Told about every new signal.
            orchestrations: Serves the orchestration routes; None answers them 404.
        """
        self._store = store
        self._scheduler = scheduler
        self._orchestrations = orchestrations

    async def serve(self, request: web.BaseRequest) -> web.Response:
        """Answer one request on the private listener, where only the webhook API lives.

        Args:
            request: The incoming request.

        Returns:
            The webhook API's answer, or 404 for any other path.
        """
        path = split_path(request.rel_url.raw_path)
        if [s.lower() for s in path[: len(WEBHOOK_SEGMENTS)]] != list(WEBHOOK_SEGMENTS):
            return error_response(404, "not_found", "Only /runtime/webhooks/durabletask/... is here.")
        return await self.handle(request, path[len(WEBHOOK_SEGMENTS) :])

    async def handle(self, request: web.BaseRequest, segments: list[str]) -> web.Response:
        """Answer one webhook request.

        Args:
            request: The incoming request.
            segments: Percent-decoded path segments after ``runtime/webhooks/durabletask``.

        Returns:
            202 for an accepted signal, 200/404 for a state read, the orchestration API's answer, or a JSON error.
        """
        if self._orchestrations is not None and segments and segments[0].lower() in ORCHESTRATION_SEGMENTS:
            return await self._orchestrations.handle(request, segments)
        if len(segments) == 2 and segments[0].lower() == "entities" and segments[1] and request.method == "GET":
            return await self._list(request, segments[1].lower())
        if len(segments) < 3 or segments[0].lower() != "entities" or not segments[1] or not all(segments[2:]):
            return error_response(
                404,
                "not_found",
                "This local host serves entities/{name}/{key}, orchestrators/{name}[/{id}] and instances/... here.",
            )
        name = segments[1].lower()
        key = "/".join(segments[2:])
        if request.method == "GET" and name not in self._scheduler.entity_names:
            # As on Azure, a read reaches any entity the task hub holds, such as one an earlier app's function
            # wrote (agent-framework-azurefunctions' dafx-* entities, read to import their conversations).
            return await self._read(name, key)
        if name not in self._scheduler.entity_names:
            known = ", ".join(sorted(self._scheduler.entity_names)) or "none"
            return error_response(
                404,
                "entity_not_found",
                f"The app has no entity function named {name!r} (its entities: {known}); nothing was queued.",
            )
        if request.method == "POST":
            return await self._signal(request, name, key)
        if request.method == "GET":
            return await self._read(name, key)
        return error_response(
            405,
            "method_not_allowed",
            f"{request.method} is not supported here; use GET or POST.",
            headers={"Allow": "GET, POST"},
        )

    async def _signal(self, request: web.BaseRequest, name: str, key: str) -> web.Response:
        """Durably enqueue a signal and schedule the entity.

        The body is kept as raw text: ``signal_entity`` already JSON-encodes the input and aiohttp encodes it again,
        and the real host forwards that text unchanged as the operation input.

        Args:
            request: The POST request; ``op`` names the operation.
            name: Lower-cased entity name.
            key: Entity key.

        Returns:
            202 with ``{}`` once the signal is stored, 415 for a body that is not JSON, 503 when it could not be stored.
        """
        operation = request.query.get("op")
        if not operation:
            return error_response(400, "bad_request", "The op query parameter (operation name) is required.")
        if problem := non_json_problem(request, "An entity signal"):
            return error_response(415, "unsupported_media_type", problem)
        raw = await read_body(request)
        try:
            operation_input = raw.decode("utf-8") if raw else None
        except UnicodeDecodeError:
            return error_response(400, "bad_request", "The operation input must be UTF-8 text.")
        try:
            seq = await asyncio.to_thread(self._store.enqueue, name, key, operation, operation_input)
        except StorageError as exc:
            logger.error("signal for %s refused: %s", entity_label(name, key), exc)
            return storage_unavailable(f"The local host could not queue the signal ({exc.cause}). Nothing was queued.")
        logger.debug("queued signal %d: %s op=%s", seq, entity_label(name, key), loggable(operation))
        self._scheduler.schedule(name, key)
        return web.Response(status=202, text="{}", content_type="application/json")

    async def _list(self, request: web.BaseRequest, name: str) -> web.Response:
        """List the entities of one entity function, in key order, as the extension's entity query answers.

        ``top`` is the page size (100 by default, as the extension's ``EntityQuery``), ``fetchState=true`` adds each
        entity's state, and the ``x-ms-continuation-token`` header asks for the page after a previous one (the
        answer carries it while more entities follow). Each entity is ``{"entityId": {"name", "key"}}`` (plus
        ``state``): the local store keeps no time of an entity's last operation, so ``lastOperationTime``, which the
        extension adds, is left out here.

        Args:
            request: The GET request.
            name: Lower-cased entity name.

        Returns:
            200 with the page, 400 for a bad ``top`` or token, 404 for an unknown entity function, 503 when the store
            failed.
        """
        if name not in self._scheduler.entity_names:
            known = ", ".join(sorted(self._scheduler.entity_names)) or "none"
            return error_response(
                404, "entity_not_found", f"The app has no entity function named {name!r} (its entities: {known})."
            )
        try:
            top = int(request.query.get("top") or ENTITY_PAGE_SIZE)
            after = _entity_after(request.headers.get("x-ms-continuation-token"))
        except ValueError as exc:
            return error_response(400, "bad_request", f"The entity query is not valid: {exc}.")
        if top < 1:
            return error_response(400, "bad_request", f"top must be at least 1, got {top}.")
        with_state = (request.query.get("fetchState") or "").lower() == "true"
        try:
            rows = await asyncio.to_thread(
                self._store.list_entities, name, after_key=after, limit=top + 1, with_state=with_state
            )
        except StorageError as exc:
            logger.error("listing entities of %s failed: %s", loggable(name), exc)
            return storage_unavailable(f"The local host could not list the entities of {name!r} ({exc.cause}).")
        page = []
        for key, state in rows[:top]:
            entity: dict[str, object] = {"entityId": {"name": name, "key": key}}
            if with_state:
                entity["state"] = json.loads(state) if state is not None else None
            page.append(entity)
        headers = {"x-ms-continuation-token": _entity_token(rows[top - 1][0])} if len(rows) > top else None
        return web.Response(status=200, text=json.dumps(page), content_type="application/json", headers=headers)

    async def _read(self, name: str, key: str) -> web.Response:
        """Return the entity's state JSON text.

        Args:
            name: Lower-cased entity name.
            key: Entity key.

        Returns:
            200 with the state as the body, 404 if the entity does not exist, 503 when the store failed.
        """
        failure = self._scheduler.storage_failure(name, key)
        if failure is not None and failure.holding_outcome:
            return storage_unavailable(
                f"Entity @{name}@{key} finished operations whose outcome the local host could not store "
                f"({failure.cause}). It keeps the outcome and retries the commit; reads answer 503 until it is stored."
            )
        if failure is not None:
            return storage_unavailable(
                f"Entity @{name}@{key} cannot run its queued operations: the local host's store failed "
                f"({failure.cause}). They stay queued and are retried; reads answer 503 until the store recovers."
            )
        try:
            state = await asyncio.to_thread(self._store.read_state, name, key)
        except StorageError as exc:
            logger.error("read of %s failed: %s", entity_label(name, key), exc)
            return storage_unavailable(f"The local host could not read entity @{name}@{key} ({exc.cause}).")
        if state is None:
            return error_response(404, "not_found", f"Entity @{name}@{key} does not exist.")
        return web.Response(status=200, text=state, content_type="application/json")


def _entity_token(key: str) -> str:
    """An opaque continuation token for the page of entities after ``key``."""
    return base64.urlsafe_b64encode(key.encode()).decode()


def _entity_after(token: str | None) -> str | None:
    """The key a continuation token stands for.

    Raises:
        ValueError: The token was not made by this host.
    """
    if not token:
        return None
    try:
        return base64.b64decode(token.encode(), altchars=b"-_", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise ValueError("the x-ms-continuation-token header is not a token this host returned") from None


def storage_unavailable(message: str) -> web.Response:
    """The answer to any request the store could not serve: 503 ``storage_unavailable``, never a 500 or plain text.

    Args:
        message: What failed and what happens to the request's data.

    Returns:
        The 503 JSON error response.
    """
    return error_response(503, "storage_unavailable", message)
