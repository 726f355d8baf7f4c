"""The orchestration part of the Durable Functions webhook API: what ``DurableOrchestrationClient`` calls.

``orchestrators/{name}[/{id}]`` starts an instance; ``instances/{id}`` reads (GET) or purges (DELETE) one;
``instances/{id}/raiseEvent/{event}`` and ``instances/{id}/terminate`` send to one; ``instances`` lists or purges
by filter. Status codes and bodies are the extension's (``HttpApiHandler``), as the SDK's client reads them. The same
module builds the management URLs the client binding and ``create_check_status_response`` hand out. Knows nothing
about episodes: it writes rows and wakes the scheduler.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from aiohttp import web
from azure.durable_functions.models.history.HistoryEventType import HistoryEventType

from .._clock import SYSTEM_CLOCK, Clock
from .errors import error_response
from .listener import read_body
from .log_text import loggable
from .orchestration_protocol import history_event, parse_timestamp
from .orchestration_scheduler import OrchestrationScheduler
from .orchestration_store import TERMINAL_STATUSES, InstanceQuery, InstanceRow, OrchestrationStore
from .outbox import InboxKind, InstanceStart, OrchestrationEvent
from .request_media import non_json_problem
from .store import StorageError

logger = logging.getLogger(__name__)

ORCHESTRATION_SEGMENTS = frozenset({"orchestrators", "instances"})
"""First path segments (after ``runtime/webhooks/durabletask``) this API serves."""

INSTANCE_ID_PLACEHOLDER = "INSTANCEID"
"""What the client binding's ``managementUrls`` hold where the instance id goes (the SDK replaces ``["id"]``)."""

DEFAULT_PAGE_SIZE = 100
"""Instances per page of ``GET instances`` when ``top`` is not given: the extension's default page size, so
``get_status_all`` returns at most this many here as on Azure."""

ANY_STATE = "AnyState"
NON_RUNNING_STATES = "NonRunningStates"
OVERRIDABLE_STATES = (ANY_STATE, NON_RUNNING_STATES)
"""Values of host.json's ``extensions.durableTask.overridableExistingInstanceStates``; the extension's default is
``NonRunningStates``: a start under the id of a pending or running instance is refused (409) instead of replacing it."""
# The extension refuses Running, Pending, ContinuedAsNew and Suspended; the local host has the first two only.
_NON_RUNNING_KEPT = frozenset({"Pending", "Running"})

MAX_INSTANCE_ID_LENGTH = 256
_INVALID_ID_CHARACTERS = re.compile(r"[/\\#?\x00-\x1f\x7f]")
_UNSUPPORTED_OPERATIONS = frozenset({"rewind", "restart", "suspend", "resume"})
_CONNECTION = "Storage"


class ManagementUrls:
    """The URL templates of the webhook API on the public port, with the function key when one is configured."""

    def __init__(self, public_base_url: Callable[[], str], function_key: str | None) -> None:
        """Configure the templates.

        Args:
            public_base_url: The public listener's base URL (known once it is bound).
            function_key: Appended as ``code=`` (the webhook API on the public port needs it); None for no key.
        """
        self._base_url = public_base_url
        self._key = function_key

    def _query(self, task_hub: str) -> str:
        """The query suffix every URL carries."""
        suffix = f"taskHub={quote(task_hub, safe='')}&connection={_CONNECTION}"
        return f"{suffix}&code={quote(self._key, safe='')}" if self._key is not None else suffix

    def _root(self) -> str:
        """The webhook API's root URL."""
        return f"{self._base_url()}/runtime/webhooks/durabletask"

    def management(self, task_hub: str, instance_id: str = INSTANCE_ID_PLACEHOLDER) -> dict[str, str]:
        """The management URLs of one instance (or the templates, with the placeholder as the id).

        Args:
            task_hub: The task hub the client names.
            instance_id: The instance, or the placeholder.

        Returns:
            ``id``, ``statusQueryGetUri``, ``sendEventPostUri``, ``terminatePostUri`` and ``purgeHistoryDeleteUri``:
            the operations the local host serves (rewind, restart, suspend and resume are left out).
        """
        query = self._query(task_hub)
        encoded = instance_id if instance_id == INSTANCE_ID_PLACEHOLDER else quote(instance_id, safe="")
        instance = f"{self._root()}/instances/{encoded}"
        return {
            "id": instance_id,
            "statusQueryGetUri": f"{instance}?{query}",
            "sendEventPostUri": f"{instance}/raiseEvent/{{eventName}}?{query}",
            "terminatePostUri": f"{instance}/terminate?reason={{text}}&{query}",
            "purgeHistoryDeleteUri": f"{instance}?{query}",
        }

    def creation(self, task_hub: str) -> dict[str, str]:
        """The creation URL templates the client binding carries.

        Args:
            task_hub: The task hub.

        Returns:
            ``createNewInstancePostUri`` and ``createAndWaitOnNewInstancePostUri``.
        """
        prefix = f"{self._root()}/orchestrators/{{functionName}}[/{{instanceId}}]"
        query = self._query(task_hub)
        return {
            "createNewInstancePostUri": f"{prefix}?{query}",
            "createAndWaitOnNewInstancePostUri": (
                f"{prefix}?timeout={{timeoutInSeconds}}&pollingInterval={{intervalInSeconds}}&{query}"
            ),
        }


class OrchestrationWebhookApi:
    """Serves the orchestration routes of the webhook API (on the private listener, and on the public one with the
    key)."""

    def __init__(
        self,
        store: OrchestrationStore,
        scheduler: OrchestrationScheduler,
        urls: ManagementUrls,
        *,
        orchestrator_names: dict[str, str],
        activity_names: frozenset[str],
        task_hub: str,
        clock: Clock = SYSTEM_CLOCK,
        overridable_existing_instance_states: str = NON_RUNNING_STATES,
    ) -> None:
        """Bind the API to its store and scheduler.

        Args:
            store: The orchestration tables.
            scheduler: Woken for every instance a request changes.
            urls: Builds the management URLs in start responses.
            orchestrator_names: Lower-cased name -> registered name of each orchestrator function.
            activity_names: Lower-cased activity names (a start naming one gets a pointed error).
            task_hub: The task hub named in the URLs this API hands out.
            clock: Where creation times and event times come from.
            overridable_existing_instance_states: Which existing instances a start with their id replaces:
                ``NonRunningStates`` (the extension's default) or ``AnyState``.

        Raises:
            ValueError: An unknown ``overridable_existing_instance_states``.
        """
        self._keep = overridable_statuses(overridable_existing_instance_states)
        self._store = store
        self._scheduler = scheduler
        self._urls = urls
        self._orchestrators = orchestrator_names
        self._activities = activity_names
        self._task_hub = task_hub
        self._clock = clock

    async def handle(self, request: web.BaseRequest, segments: list[str]) -> web.Response:
        """Answer one request under ``orchestrators/`` or ``instances/``.

        Args:
            request: The request.
            segments: Decoded path segments after ``runtime/webhooks/durabletask``.

        Returns:
            The response.
        """
        try:
            if segments[0].lower() == "orchestrators":
                return await self._orchestrators_route(request, segments[1:])
            return await self._instances_route(request, segments[1:])
        except StorageError as exc:
            logger.error("the orchestration API could not reach the store: %s", exc)
            return error_response(
                503, "storage_unavailable", f"The local host could not reach its store ({exc.cause}); nothing changed."
            )

    # -- routing ------------------------------------------------------------------------------------------------

    async def _orchestrators_route(self, request: web.BaseRequest, rest: list[str]) -> web.Response:
        """``orchestrators/{name}[/{id}]``: POST starts an instance."""
        if not 1 <= len(rest) <= 2 or not all(rest):
            return error_response(404, "not_found", "Use orchestrators/{functionName} or orchestrators/{name}/{id}.")
        if request.method != "POST":
            return _method_not_allowed(request.method, "POST")
        return await self._start(request, rest[0], rest[1] if len(rest) == 2 else None)

    async def _instances_route(self, request: web.BaseRequest, rest: list[str]) -> web.Response:
        """``instances[/{id}[/{operation}[/{event}]]]``."""
        method = request.method
        if not rest:
            if method == "GET":
                return await self._list(request)
            if method == "DELETE":
                return await self._purge_where(request)
            return _method_not_allowed(method, "GET, DELETE")
        instance_id = rest[0]
        if len(rest) == 1:
            if method == "GET":
                return await self._status(request, instance_id)
            if method == "DELETE":
                return await self._purge(instance_id)
            return _method_not_allowed(method, "GET, DELETE")
        operation = rest[1].lower()
        if method != "POST":
            return _method_not_allowed(method, "POST")
        if operation == "raiseevent" and len(rest) == 3 and rest[2]:
            return await self._raise_event(request, instance_id, rest[2])
        if operation == "terminate" and len(rest) == 2:
            return await self._terminate(request, instance_id)
        if operation in _UNSUPPORTED_OPERATIONS and len(rest) == 2:
            return error_response(
                501,
                "not_supported",
                f"The local host does not support {operation} of orchestration instances; it serves start, status, "
                "raise event, terminate and purge. Run the app with Azure Functions Core Tools or on Azure for it.",
            )
        return error_response(404, "not_found", f"No webhook operation {rest[1]!r} on instances/{{id}}.")

    # -- starting -----------------------------------------------------------------------------------------------

    async def _start(self, request: web.BaseRequest, name: str, instance_id: str | None) -> web.Response:
        """Start an instance: 202 with its management URLs; 400 for an unknown orchestrator, a bad id or bad JSON; 409
        when an instance with the id runs and the overridable states keep it; 415 for a body that is not JSON."""
        if problem := non_json_problem(request, "An orchestration start"):
            return _start_error(415, "unsupported_media_type", problem)
        registered = self._orchestrators.get(name.lower())
        if registered is None:
            known = ", ".join(sorted(set(self._orchestrators.values()))) or "none"
            is_activity = name.lower() in self._activities
            hint = " It is an activity function: start an orchestrator that calls it." if is_activity else ""
            # 400 with ExceptionMessage, as the extension answers (the SDK client raises with that message).
            return _start_error(
                400,
                "orchestrator_not_found",
                f"The function '{name}' doesn't exist, is disabled, or is not an orchestrator function.{hint} "
                f"The app's orchestrator functions: {known}. Nothing was started.",
            )
        if instance_id is not None and (problem := _instance_id_problem(instance_id)):
            return _start_error(400, "invalid_instance_id", problem)
        body = (await read_body(request)).decode("utf-8", errors="replace").strip()
        if body and not _is_json(body):
            return _start_error(400, "invalid_json", "The orchestration input must be JSON; nothing was started.")
        instance_id = instance_id or uuid.uuid4().hex
        start = InstanceStart(
            instance_id=instance_id,
            name=registered,
            version=request.query.get("version"),
            execution_id=uuid.uuid4().hex,
            input=body or None,  # the body as sent, which is the SDK client's encoded input as a JSON string
            at_ms=self._clock.now_ms(),
            parent_trace_context=_trace_context(request),
        )
        existing = await asyncio.to_thread(self._store.start, start, keep_statuses=self._keep)
        if existing is not None:
            # The extension's answer (OrchestrationAlreadyExistsException, 409); the SDK client raises with its body.
            return _start_error(
                409,
                "instance_exists",
                f"An Orchestration instance with the status {existing.status} already exists. Start it again once it "
                "has finished, or set extensions.durableTask.overridableExistingInstanceStates to AnyState in "
                "host.json to replace running instances.",
            )
        self._scheduler.schedule(instance_id)
        logger.info("started orchestration %s (%s)", loggable(instance_id), loggable(registered))
        timeout, interval = _seconds(request.query.get("timeout")), _seconds(request.query.get("pollingInterval"))
        if timeout is not None and interval is not None:
            return await self._wait_for_completion(instance_id, timeout, interval)
        return self._check_status_response(instance_id)

    async def _wait_for_completion(self, instance_id: str, timeout: float, interval: float) -> web.Response:
        """The create-and-wait form of start: the output once completed, the status once failed, else 202."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            record = await asyncio.to_thread(self._store.instance, instance_id)
            if record is not None and record.status == "Completed":
                return web.Response(status=200, text=record.output or "null", content_type="application/json")
            if record is not None and record.is_terminal:
                return _json(200, status_body(record, show_input=True))
            remaining = deadline - loop.time()
            if remaining <= 0:
                return self._check_status_response(instance_id)
            await asyncio.sleep(min(interval, remaining))

    def _check_status_response(self, instance_id: str) -> web.Response:
        """202 with the instance's management URLs and a Location to poll, as the extension answers a start."""
        payload = self._urls.management(self._task_hub, instance_id)
        return _json(202, payload, headers={"Location": payload["statusQueryGetUri"], "Retry-After": "10"})

    # -- reading ------------------------------------------------------------------------------------------------

    async def _status(self, request: web.BaseRequest, instance_id: str) -> web.Response:
        """An instance's status: 202 while pending or running, 200 once finished, 404 if unknown."""
        record = await asyncio.to_thread(self._store.instance, instance_id)
        if record is None:
            return error_response(404, "instance_not_found", f"No orchestration instance with id {instance_id!r}.")
        show_history = _flag(request.query.get("showHistory"), default=False)
        history = None
        if show_history:
            events = await asyncio.to_thread(self._store.history, instance_id)
            history = history_events(events, with_output=_flag(request.query.get("showHistoryOutput"), default=False))
        body = status_body(record, show_input=_flag(request.query.get("showInput"), default=True), history=history)
        if not record.is_terminal:
            return _json(202, body, headers={"Location": str(request.url), "Retry-After": "5"})
        failed_as_500 = _flag(request.query.get("returnInternalServerErrorOnFailure"), default=False)
        return _json(500 if record.status == "Failed" and failed_as_500 else 200, body)

    async def _list(self, request: web.BaseRequest) -> web.Response:
        """``get_status_all`` / ``get_status_by``: a page of statuses; ``x-ms-continuation-token`` for the next."""
        try:
            query = _query_from(request)
            top = int(request.query.get("top") or DEFAULT_PAGE_SIZE)
            after = _read_token(request.headers.get("x-ms-continuation-token"))
        except ValueError as exc:
            return error_response(400, "invalid_query", str(exc))
        if top < 1:
            return error_response(400, "invalid_query", f"top must be at least 1, got {top}.")
        records = await asyncio.to_thread(self._store.query, query, after_id=after, limit=top + 1)
        show_input = _flag(request.query.get("showInput"), default=True)
        headers = {"x-ms-continuation-token": _token(records[top - 1].instance_id)} if len(records) > top else None
        return _json(200, [status_body(r, show_input=show_input) for r in records[:top]], headers=headers)

    # -- changing -----------------------------------------------------------------------------------------------

    async def _raise_event(self, request: web.BaseRequest, instance_id: str, event_name: str) -> web.Response:
        """Queue an external event: 202; 404 unknown instance; 410 finished; 400 not JSON."""
        record = await asyncio.to_thread(self._store.instance, instance_id)
        if record is None:
            return error_response(404, "instance_not_found", f"No orchestration instance with id {instance_id!r}.")
        if record.is_terminal:
            return error_response(
                410, "instance_finished", f"Instance {instance_id!r} is {record.status}; it takes no more events."
            )
        if request.content_type.lower() != "application/json":
            return error_response(
                400, "unsupported_content_type", "Only application/json request content is supported."
            )
        body = (await read_body(request)).decode("utf-8", errors="replace").strip() or "null"
        if not _is_json(body):
            return error_response(400, "invalid_json", "The event data must be JSON; no event was raised.")
        now = self._clock.now_ms()
        # The body goes into the event verbatim: the SDK client encodes the data to JSON and aiohttp encodes that
        # string again, so the orchestrator receives the data's JSON text, as on Azure.
        event = history_event(HistoryEventType.EVENT_RAISED, now, Name=event_name, Input=body)
        message = OrchestrationEvent(instance_id, None, InboxKind.EVENT, event, now, now)
        await asyncio.to_thread(self._store.send, [message])
        self._scheduler.schedule(instance_id)
        return web.Response(status=202)

    async def _terminate(self, request: web.BaseRequest, instance_id: str) -> web.Response:
        """Queue a terminate request: 202; 404 unknown; 410 already finished."""
        record = await asyncio.to_thread(self._store.instance, instance_id)
        if record is None:
            return error_response(404, "instance_not_found", f"No orchestration instance with id {instance_id!r}.")
        if record.is_terminal:
            return error_response(410, "instance_finished", f"Instance {instance_id!r} is already {record.status}.")
        now = self._clock.now_ms()
        event = history_event(HistoryEventType.EXECUTION_TERMINATED, now, Input=request.query.get("reason"))
        message = OrchestrationEvent(instance_id, None, InboxKind.TERMINATE, event, now, now)
        await asyncio.to_thread(self._store.send, [message])
        self._scheduler.schedule(instance_id)
        return web.Response(status=202)

    async def _purge(self, instance_id: str) -> web.Response:
        """Delete a finished instance's record and history: 200; 404 unknown; 412 still running."""
        record = await asyncio.to_thread(self._store.instance, instance_id)
        if record is None:
            return error_response(404, "instance_not_found", f"No orchestration instance with id {instance_id!r}.")
        if not record.is_terminal:
            return error_response(
                412,
                "instance_running",
                f"Only orchestrations in a terminal state can be purged, but {instance_id!r} is {record.status}; "
                "terminate it first.",
            )
        deleted = await asyncio.to_thread(self._store.purge, [instance_id])
        return _json(200, {"instancesDeleted": deleted})

    async def _purge_where(self, request: web.BaseRequest) -> web.Response:
        """``purge_instance_history_by``: delete finished instances created in a time range (and of some statuses)."""
        if not request.query.get("createdTimeFrom"):
            return error_response(400, "invalid_query", "Please provide a value for the createdTimeFrom parameter.")
        try:
            query = _query_from(request)
        except ValueError as exc:
            return error_response(400, "invalid_query", str(exc))
        if query.created_to_ms is None:
            query = InstanceQuery(query.created_from_ms, self._clock.now_ms(), query.statuses, query.id_prefix)
        statuses = query.statuses & TERMINAL_STATUSES if query.statuses else TERMINAL_STATUSES
        query = InstanceQuery(query.created_from_ms, query.created_to_ms, frozenset(statuses), query.id_prefix)
        records = await asyncio.to_thread(self._store.query, query, after_id=None, limit=1_000_000)
        deleted = await asyncio.to_thread(self._store.purge, [r.instance_id for r in records])
        if not deleted:
            return error_response(404, "instance_not_found", "No finished instance matches; nothing was purged.")
        return _json(200, {"instancesDeleted": deleted})


def status_body(
    record: InstanceRow, *, show_input: bool, history: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An instance's status as the extension writes it (``DurableOrchestrationStatus.from_json`` reads it).

    The input is the stored JSON value: the SDK client's start sends its encoded input as a JSON string, so
    ``input_`` is that text, as on Azure; the output and the custom status are the values.

    Args:
        record: The instance.
        show_input: Include the input.
        history: The converted history (``showHistory``), under ``historyEvents`` as the extension names it.

    Returns:
        The body.
    """
    body: dict[str, Any] = {
        "name": record.name,
        "instanceId": record.instance_id,
        "runtimeStatus": record.status,
        "input": json.loads(record.input) if show_input and record.input is not None else None,
        "customStatus": json.loads(record.custom_status) if record.custom_status is not None else None,
        "output": json.loads(record.output) if record.output is not None else None,
        "createdTime": _seconds_text(record.created_ms),
        "lastUpdatedTime": _seconds_text(record.updated_ms),
    }
    if history is not None:
        body["historyEvents"] = history
    return body


_HIDDEN_IN_HISTORY = frozenset({HistoryEventType.ORCHESTRATOR_STARTED, HistoryEventType.ORCHESTRATOR_COMPLETED})
_OUTPUT_FIELDS = ("Input", "Result", "Details")


def history_events(events: list[dict[str, Any]], *, with_output: bool) -> list[dict[str, Any]]:
    """The history as ``showHistory`` returns it: event types by name, episode markers left out, payloads (inputs,
    results, failure details) only with ``showHistoryOutput``.

    Args:
        events: The stored events.
        with_output: Include payloads.

    Returns:
        The events.
    """
    shown = []
    for event in events:
        event_type = HistoryEventType(event["EventType"])
        if event_type in _HIDDEN_IN_HISTORY:
            continue
        item = {key: value for key, value in event.items() if key not in ("EventType", "IsPlayed")}
        if not with_output:
            for key in _OUTPUT_FIELDS:
                item.pop(key, None)
        shown.append({"EventType": "".join(part.capitalize() for part in event_type.name.split("_")), **item})
    return shown


def _instance_id_problem(instance_id: str) -> str | None:
    """Why an instance id cannot be used, or None."""
    if len(instance_id) > MAX_INSTANCE_ID_LENGTH:
        return f"Instance ids may be at most {MAX_INSTANCE_ID_LENGTH} characters; this one has {len(instance_id)}."
    if instance_id.startswith("@"):
        return "Instance ids may not start with '@' (entity ids do)."
    if instance_id in (".", ".."):
        return f"Instance id {instance_id!r} is a URL path step: no URL could name the instance. Use another id."
    if _INVALID_ID_CHARACTERS.search(instance_id):
        return "Instance ids may not contain '/', '\\', '#', '?' or control characters."
    return None


def overridable_statuses(setting: str) -> frozenset[str]:
    """The statuses of an existing instance that refuse a start under its id, for an
    ``overridableExistingInstanceStates`` value (compared ignoring case, as the extension reads its options).

    Raises:
        ValueError: The value is not one of ``OVERRIDABLE_STATES``.
    """
    chosen = next((name for name in OVERRIDABLE_STATES if name.lower() == str(setting).lower()), None)
    if chosen is None:
        raise ValueError(
            f"overridableExistingInstanceStates must be {' or '.join(OVERRIDABLE_STATES)}, not {setting!r}."
        )
    return _NON_RUNNING_KEPT if chosen == NON_RUNNING_STATES else frozenset()


def _start_error(status: int, code: str, message: str) -> web.Response:
    """An error of the start route: our error body plus ``ExceptionMessage``, which the SDK client raises with."""
    return _json(status, {"error": {"code": code, "message": message}, "Message": message, "ExceptionMessage": message})


def _method_not_allowed(method: str, allowed: str) -> web.Response:
    """405 naming the methods the route takes."""
    return error_response(
        405, "method_not_allowed", f"{method} is not supported here; use {allowed}.", headers={"Allow": allowed}
    )


def _json(status: int, body: Any, *, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON response."""
    return web.Response(status=status, text=json.dumps(body), content_type="application/json", headers=headers)


def _flag(value: str | None, *, default: bool) -> bool:
    """A boolean query parameter (``true``/``false``, any case), or its default when absent or unreadable."""
    if value is None or value.lower() not in ("true", "false"):
        return default
    return value.lower() == "true"


def _seconds(value: str | None) -> float | None:
    """A number of seconds from a query parameter, or None."""
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _seconds_text(ms: int) -> str:
    """A time as the extension writes ``createdTime``: UTC, whole seconds, ``Z``."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _query_from(request: web.BaseRequest) -> InstanceQuery:
    """The filters of a list or purge request.

    Raises:
        ValueError: A time or a runtime status is not valid.
    """
    statuses: set[str] = set()
    for value in request.query.getall("runtimeStatus", []):
        for status in filter(None, (part.strip() for part in value.split(","))):
            if status not in {"Pending", "Running", "Completed", "Failed", "Terminated", "ContinuedAsNew"}:
                raise ValueError(f"runtimeStatus {status!r} is not a runtime status.")
            statuses.add(status)
    return InstanceQuery(
        created_from_ms=_time(request.query.get("createdTimeFrom"), "createdTimeFrom"),
        created_to_ms=_time(request.query.get("createdTimeTo"), "createdTimeTo"),
        statuses=frozenset(statuses),
        id_prefix=request.query.get("instanceIdPrefix") or None,
    )


def _time(value: str | None, name: str) -> int | None:
    """A time filter in milliseconds.

    Raises:
        ValueError: The value is not an ISO time.
    """
    if not value:
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        raise ValueError(f"{name} must be an ISO 8601 UTC time such as 2024-01-31T12:00:00.000000Z.") from None


def _token(instance_id: str) -> str:
    """An opaque continuation token for the page after ``instance_id``."""
    return base64.urlsafe_b64encode(instance_id.encode()).decode()


def _read_token(token: str | None) -> str | None:
    """The instance id a continuation token stands for.

    Raises:
        ValueError: The token was not made by this host.
    """
    if not token:
        return None
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise ValueError("The x-ms-continuation-token header is not a token this host returned.") from None


def _is_json(text: str) -> bool:
    """Whether `text` is JSON the host can read: nested deeper than the parser goes counts as not JSON."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _trace_context(request: web.BaseRequest) -> dict[str, str] | None:
    """The W3C trace context the client sent with a start (the SDK sends its current span's), as the Durable Task
    Framework records it in ExecutionStarted."""
    parent = request.headers.get("traceparent")
    if not parent:
        return None
    state = request.headers.get("tracestate")
    return {"TraceParent": parent, **({"TraceState": state} if state else {})}
