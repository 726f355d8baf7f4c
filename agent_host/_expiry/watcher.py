"""The expiry orchestration of one conversation: sleep until it could be idle for its TTL, ask its entity, repeat.

One instance per conversation, under an id derived from the entity name and the conversation id, so starting it
again is refused while it runs (the Durable extension's default, `overridableExistingInstanceStates`
`NonRunningStates`). Each execution sleeps on a durable timer, then calls the entity's `expire_if_idle` with the
orchestration's own time (`current_utc_datetime`, never the machine's clock) and the TTL configured now. An active
conversation answers when it would next be idle for its TTL: the orchestration continues as new and sleeps until
then, so its history stays a few events long. An expired one was deleted by that call, a deleted or missing one
needs no watching: the orchestration completes. The next turn of the same id starts a new one.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import math
from collections.abc import Callable, Generator
from typing import Any

import azure.durable_functions as df
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from .._contract import EXPIRE_OPERATION, ExpireOperation

logger = logging.getLogger("agent_host.expiry")

EXPIRY_ORCHESTRATOR = "expiry_conversation"
"""The orchestrator function (function names under `expiry_` belong to the host, as `api_` and `conversation_`)."""
INSTANCE_PREFIX = "expiry:"
# The Durable Task Scheduler takes instance ids of at most 100 characters; a longer readable id is hashed.
MAX_READABLE_INSTANCE_ID = 100
CHECK_AT_STATUS_KEY = "checkAt"

TtlLookup = Callable[[str], float]
"""The TTL configured now for an entity name, in seconds (0: off, as for an entity the app no longer hosts)."""


class WatchInput(BaseModel):
    """The orchestration's input: whose conversation, and either the TTL of its first sleep or when to look again."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")

    entity: StrictStr
    key: StrictStr
    ttl_seconds: StrictFloat | StrictInt | None = Field(default=None, gt=0, allow_inf_nan=False)
    check_at: StrictInt | None = None

    @model_validator(mode="after")
    def _knows_when_to_wake(self) -> WatchInput:
        if (self.ttl_seconds is None) == (self.check_at is None):
            raise ValueError("give either ttlSeconds (a first sleep) or checkAt (when to look again)")
        return self

    def wire(self) -> dict[str, Any]:
        """The input as it travels (camelCase, unset fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)


def expiry_instance_id(entity_name: str, conversation_id: str) -> str:
    """The instance id of a conversation's expiry orchestration: `expiry:<entity>:<conversation id>`.

    `:` occurs in neither part, so the id names one conversation; past 100 characters it is a digest instead.
    """
    readable = f"{INSTANCE_PREFIX}{entity_name.lower()}:{conversation_id}"
    if len(readable) <= MAX_READABLE_INSTANCE_ID:
        return readable
    digest = hashlib.sha256(f"{entity_name.lower()}:{conversation_id}".encode()).hexdigest()[:64]
    return f"{INSTANCE_PREFIX}{digest}"


def expiry_orchestrator(context: df.DurableOrchestrationContext, ttl_for: TtlLookup) -> Generator[Any, Any, Any]:
    """The orchestrator body: one sleep and one check per execution.

    Everything that decides what it schedules comes from its input or from recorded results, so a replay schedules
    the same; the TTL read from `ttl_for` only travels in the check's input.
    """
    watch = WatchInput.model_validate(context.get_input())
    now = context.current_utc_datetime
    if watch.check_at is not None:
        check_at = watch.check_at
    else:
        check_at = _epoch_ms(now) + math.ceil(float(watch.ttl_seconds or 0) * 1000)
    context.set_custom_status({CHECK_AT_STATUS_KEY: check_at})
    yield context.create_timer(datetime.datetime.fromtimestamp(check_at / 1000, tz=datetime.UTC))
    check = ExpireOperation(now_ms=_epoch_ms(context.current_utc_datetime), ttl_seconds=ttl_for(watch.entity))
    try:
        verdict = yield context.call_entity(
            df.EntityId(watch.entity, watch.key), EXPIRE_OPERATION, check.model_dump(by_alias=True)
        )
    except Exception as exc:  # the entity refused the call: its app no longer hosts it, or it is not ours
        if not context.is_replaying:
            logger.warning("Expiry of conversation %s/%s stopped: %s", watch.entity, watch.key, str(exc)[:300])
        return {"status": "failed", "error": str(exc)[:300]}
    if isinstance(verdict, dict) and verdict.get("status") == "active" and isinstance(verdict.get("checkAt"), int):
        again = WatchInput(entity=watch.entity, key=watch.key, check_at=verdict["checkAt"])
        context.continue_as_new(again.wire())
        return None
    return verdict


def _epoch_ms(moment: datetime.datetime) -> int:
    if moment.tzinfo is None:
        # The SDK reads the host's UTC timestamps; without an offset they are UTC all the same.
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)
