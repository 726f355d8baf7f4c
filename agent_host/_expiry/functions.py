"""Registering expiry on the app: the expiry orchestrator, the activity orchestrations start it through, and the TTL
of each conversation entity.

Both functions are registered whatever the TTLs, so orchestrations that are already running find them after the
setting is turned off (their next check then ends them without deleting anything).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import azure.durable_functions as df

from .._expiry_settings import TTL_OFF
from .orchestration import EXPIRY_ACTIVITY, watch_input
from .starter import watch_conversation
from .watcher import EXPIRY_ORCHESTRATOR, expiry_orchestrator


class ExpiryFunctions:
    """The app's expiry functions and the TTL of every conversation entity it hosts.

    Args:
        app: The app to register the functions on.
    """

    def __init__(self, app: df.DFApp) -> None:
        self._ttls: dict[str, float] = {}
        self._register_orchestrator(app)
        self._register_activity(app)

    def set_ttl(self, entity_name: str, ttl_seconds: float) -> None:
        """How long conversations of `entity_name` may stay idle (0: never expire)."""
        self._ttls[entity_name.lower()] = ttl_seconds

    def ttl_for(self, entity_name: str) -> float:
        """The TTL of an entity's conversations now; 0 for one this app does not host (its watching ends)."""
        return self._ttls.get(entity_name.lower(), TTL_OFF)

    def _register_orchestrator(self, app: df.DFApp) -> None:
        ttl_for = self.ttl_for

        def expiry_conversation(context: df.DurableOrchestrationContext) -> Generator[Any, Any, Any]:
            return (yield from expiry_orchestrator(context, ttl_for))

        expiry_conversation.__name__ = EXPIRY_ORCHESTRATOR
        app.function_name(EXPIRY_ORCHESTRATOR)(app.orchestration_trigger(context_name="context")(expiry_conversation))

    def _register_activity(self, app: df.DFApp) -> None:
        # A bare `dict`: the worker refuses a parameterized annotation such as dict[str, Any] on a binding.
        async def expiry_watch(watch: dict, client: df.DurableOrchestrationClient) -> str:
            first = watch_input(watch)
            return await watch_conversation(client, first.entity, first.key, float(first.ttl_seconds or TTL_OFF))

        expiry_watch.__name__ = EXPIRY_ACTIVITY
        with_client = app.durable_client_input(client_name="client")(expiry_watch)
        app.function_name(EXPIRY_ACTIVITY)(app.activity_trigger(input_name="watch")(with_client))
