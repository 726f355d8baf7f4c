"""Starting a conversation's expiry orchestration from a durable client: on every turn, idempotently, never failing
the turn.

`start_new` under the conversation's instance id starts the orchestration when none runs and is refused (409) while
one does, which is all "idempotent" needs: the running one sees every later turn when it wakes. One gap remains in
that rule: an orchestration that has just found its conversation deleted is still running for a moment before it
completes, and refuses a start meant for a new conversation of the same id. A caller that knows its turn created the
conversation (its first turn) therefore confirms that a refusing orchestration will look again later, or starts a new
one once it has completed. Turns of a conversation seen watched moments ago skip the start (recent.py). Knows the
durable client and the orchestration's id and status, not the conversation state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any, Literal

import azure.durable_functions as df
from azure.durable_functions.models.OrchestrationRuntimeStatus import OrchestrationRuntimeStatus

from .._clock import Clock
from .._contract import AgentRoute
from .recent import RECENT_WATCHES
from .watcher import CHECK_AT_STATUS_KEY, EXPIRY_ORCHESTRATOR, WatchInput, expiry_instance_id

logger = logging.getLogger("agent_host.expiry")

WatchOutcome = Literal["started", "watched", "off", "failed"]
STARTED: WatchOutcome = "started"
WATCHED: WatchOutcome = "watched"
OFF: WatchOutcome = "off"
FAILED: WatchOutcome = "failed"
# How long a caller whose turn created the conversation waits for a finishing orchestration to complete (it has
# made its last call to the entity and only has to commit); past this the gap is logged, not waited out.
CONFIRM_SECONDS = 10.0
_FIRST_POLL_SECONDS = 0.02
_MAX_POLL_SECONDS = 0.5
_TERMINAL = frozenset(
    {OrchestrationRuntimeStatus.Completed, OrchestrationRuntimeStatus.Failed, OrchestrationRuntimeStatus.Terminated}
)


async def watch_conversation(
    client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str, ttl_seconds: float
) -> WatchOutcome:
    """Make sure the conversation's expiry orchestration runs; never raises.

    Args:
        client: The durable client binding.
        entity_name: The conversation's entity (function) name.
        conversation_id: The conversation id (the entity key).
        ttl_seconds: The agent's TTL; 0 does nothing.

    Returns:
        `started`, `watched` (one was already running: it sees this conversation when it wakes), `off`, or `failed`
        (logged; the next turn tries again).
    """
    if ttl_seconds <= 0:
        return OFF
    watch = _Watch(client, entity_name, conversation_id, ttl_seconds)
    return await watch.guarded(watch.start())


async def confirm_watched(
    client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str, ttl_seconds: float, now_ms: int
) -> WatchOutcome:
    """For a conversation the caller's turn created, after a start was refused: wait until the running orchestration
    is known to look again later than `now_ms`, or start a new one once it has completed. Never raises."""
    if ttl_seconds <= 0:
        return OFF
    watch = _Watch(client, entity_name, conversation_id, ttl_seconds)
    return await watch.guarded(watch.confirm(now_ms))


async def may_hold_queued_turns(
    client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str, ttl_seconds: float
) -> bool:
    """Whether a conversation with nothing stored may still have a turn on its way.

    Every route that accepts a turn starts the conversation's expiry orchestration before it answers with the turn's
    id, so with expiry on, no running orchestration means no turn was ever accepted. With expiry off, or a status that
    cannot be read, nothing rules a queued turn out.
    """
    if ttl_seconds <= 0:
        return True
    try:
        return await _Watch(client, entity_name, conversation_id, ttl_seconds).is_running()
    except Exception as exc:
        logger.warning("Could not read the expiry orchestration of %s: %s", conversation_id[:80], type(exc).__name__)
        return True


class TurnExpiry:
    """A turn's start of its conversation's expiry orchestration, sent alongside the turn and settled after it.

    Args:
        client: The durable client binding.
        route: The agent (its entity name and TTL).
        conversation_id: The conversation.
        clock: The caller's clock (a refusing orchestration must look again later than now).
    """

    def __init__(
        self, client: df.DurableOrchestrationClient, route: AgentRoute, conversation_id: str, clock: Clock
    ) -> None:
        self._client = client
        self._route = route
        self._conversation_id = conversation_id
        self._clock = clock
        # With expiry off nothing is ever remembered, and looking costs a read of the durable client's internals.
        recent = route.conversation_ttl_seconds > 0 and RECENT_WATCHES.is_recent(
            client, route.entity_name, conversation_id
        )
        # Started now, so the start's round trip overlaps the turn instead of adding to it.
        self._started = None if recent else asyncio.ensure_future(self._start())

    async def _start(self) -> WatchOutcome:
        route = self._route
        ttl = route.conversation_ttl_seconds
        return await watch_conversation(self._client, route.entity_name, self._conversation_id, ttl)

    async def finish(self, turn_count: int | None = None) -> WatchOutcome:
        """The start's outcome. When the turn's conversation is new (`turn_count`, its turns once this one settled,
        is at most 1) it is started even if seen watched moments ago, and a refusal is confirmed (see the module)."""
        fresh = turn_count is not None and turn_count <= 1
        if self._started is None and not fresh:
            return WATCHED
        outcome = await (self._started if self._started is not None else self._start())
        if outcome == WATCHED and fresh:
            route = self._route
            outcome = await confirm_watched(
                self._client,
                route.entity_name,
                self._conversation_id,
                route.conversation_ttl_seconds,
                self._clock.now_ms(),
            )
        if outcome in (STARTED, WATCHED):
            RECENT_WATCHES.remember(self._client, self._route.entity_name, self._conversation_id)
        return outcome


class _Watch:
    """One conversation's expiry orchestration, as a durable client starts and inspects it."""

    def __init__(
        self, client: df.DurableOrchestrationClient, entity_name: str, conversation_id: str, ttl_seconds: float
    ) -> None:
        self.client = client
        self.instance_id = expiry_instance_id(entity_name, conversation_id)
        self.first = WatchInput(entity=entity_name, key=conversation_id, ttl_seconds=ttl_seconds).wire()

    async def guarded(self, step: Awaitable[WatchOutcome]) -> WatchOutcome:
        """`step`'s outcome, or `failed` (logged) when it raised: a turn never fails because of its expiry."""
        try:
            return await step
        except Exception as exc:
            logger.warning(
                "Could not start the expiry orchestration %s: %s; the conversation's next turn tries again",
                self.instance_id,
                f"{type(exc).__name__}: {exc}"[:300],
            )
            return FAILED

    async def start(self) -> WatchOutcome:
        """Start the orchestration, or learn that it runs (raises on any other failure)."""
        try:
            await self.client.start_new(EXPIRY_ORCHESTRATOR, self.instance_id, self.first)
        except Exception as exc:
            # The SDK raises a bare Exception with the host's body; the extension answers a start of a running id
            # with 409 "An Orchestration instance with the status Running already exists.". Other refusals are
            # checked against the instance's status.
            if "already exists" in str(exc) or await self.is_running():
                return WATCHED
            raise
        return STARTED

    async def is_running(self) -> bool:
        """Whether the orchestration is pending or running."""
        status = await self.client.get_status(self.instance_id)
        runtime = getattr(status, "runtime_status", None)
        return runtime is not None and runtime not in _TERMINAL

    async def confirm(self, now_ms: int) -> WatchOutcome:
        """See `confirm_watched`."""
        deadline = time.monotonic() + CONFIRM_SECONDS
        interval = _FIRST_POLL_SECONDS
        while True:
            status = await self.client.get_status(self.instance_id)
            runtime = getattr(status, "runtime_status", None)
            if runtime is None or runtime in _TERMINAL:
                if await self.start() == STARTED:
                    return STARTED
            elif _wakes_after(getattr(status, "custom_status", None), now_ms):
                return WATCHED
            if time.monotonic() >= deadline:
                logger.warning(
                    "The expiry orchestration %s neither completed nor scheduled its next check within %g s; this "
                    "conversation is watched again from its next turn",
                    self.instance_id,
                    CONFIRM_SECONDS,
                )
                return WATCHED
            await asyncio.sleep(interval)
            interval = min(interval * 2, _MAX_POLL_SECONDS)


def _wakes_after(custom_status: Any, now_ms: int) -> bool:
    """Whether the orchestration's custom status says it sleeps until after `now_ms` (none yet: it has not run its
    first episode, whose sleep ends a whole TTL from now)."""
    if custom_status is None or custom_status == "":
        return True
    check_at = custom_status.get(CHECK_AT_STATUS_KEY) if isinstance(custom_status, dict) else None
    return isinstance(check_at, int) and check_at > now_ms
