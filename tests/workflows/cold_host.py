"""A local host that runs every orchestrator episode, activity and entity batch on a freshly built app.

As if each step ran in a new process: new workflow, executor and agent objects, and nothing decoded kept in the
conversation cache. Only what the host stored (histories, entity state) carries a run from one step to the next.
Models are shared by every app the factory builds (they stand for the service, which outlives processes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hosting import RunningHost

from agent_host import AgentFunctionApp
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host._local_host.functions import OrchestratorFunction


def fresh_functions(factory: Callable[[], AgentFunctionApp]) -> dict[str, Callable[..., Any]]:
    """A new app's functions by lower-cased name, after forgetting everything decoded (a cold start)."""
    CONVERSATION_CACHE.clear()
    functions = factory().get_functions()
    return {function.get_function_name().lower(): function.get_user_function() for function in functions}


class ColdHost(RunningHost):
    """`RunningHost` whose durable functions each run on a new app from `app_factory`.

    Attributes:
        cold_starts: How many fresh apps were built for durable functions.
    """

    def __init__(self, app_factory: Callable[[], AgentFunctionApp], state_dir: Path) -> None:
        self.cold_starts = 0
        # Direct calls: the cold functions it swaps in are the app's own, which the worker would never see.
        super().__init__(app_factory, state_dir, invocation="direct")

    def start(self) -> None:
        super().start()
        assert self.host is not None
        orchestrators = self.host.durable_functions.orchestrators
        for key, function in list(orchestrators.items()):
            orchestrators[key] = OrchestratorFunction(function.name, self._cold(function.name), function.user_function)
        activities = self.host.durable_functions.activities
        for key, activity in list(activities.items()):
            cold = self._cold(activity.name, asynchronous=activity.is_async)
            activities[key] = replace(activity, user_function=cold)
        # The test swaps in cold entity functions where the scheduler keeps them.
        entities = self.host.scheduler._functions
        for key in list(entities):
            entities[key] = self._cold(key)

    def _cold(self, name: str, *, asynchronous: bool = False) -> Callable[..., Any]:
        """The function `name` of a freshly built app; a coroutine function for one (the worker awaits only those)."""

        def fresh() -> Callable[..., Any]:
            self.cold_starts += 1
            return fresh_functions(self.app_factory)[name.lower()]

        async def run_async(*args: Any, **kwargs: Any) -> Any:
            return await fresh()(*args, **kwargs)

        def run(*args: Any, **kwargs: Any) -> Any:
            return fresh()(*args, **kwargs)

        return run_async if asynchronous else run
