"""Who keeps an agent's history, decided once when the agent is registered, never per operation.

Core's precedence decides whether the model service stores the conversation (architecture.md, failure 10);
otherwise the agent's in-memory history provider is swapped for its durable twin on the copies the host runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agent_framework import ContextProvider, HistoryProvider, InMemoryHistoryProvider, SupportsAgentRun

from .history import DurableHistoryProvider

HistoryOwner = Literal["durable", "external", "service"]


@dataclass(frozen=True)
class HistoryPlan:
    """Who keeps an agent's history, and the provider list its per-turn copies run with.

    Attributes:
        owner: `durable` (the conversation entity), `external` (the agent's own history provider) or `service`.
        providers: The context providers each turn's copy of the agent runs with.
        durable: The durable history provider among them, when the entity keeps the history.
    """

    owner: HistoryOwner
    providers: tuple[ContextProvider, ...]
    durable: DurableHistoryProvider | None


def resolve_store(agent: SupportsAgentRun, run_options: dict[str, Any] | None = None) -> bool:
    """Whether the model service keeps the history, by core's precedence.

    An explicit `store` in the run options wins, then the agent's `default_options["store"]`, then the
    chat client's `STORES_BY_DEFAULT`.
    """
    for options in (run_options or {}, getattr(agent, "default_options", None) or {}):
        if options.get("store") is not None:
            return bool(options["store"])
    return bool(getattr(getattr(agent, "client", None), "STORES_BY_DEFAULT", False))


def plan_history(agent: SupportsAgentRun) -> HistoryPlan:
    """Decide who owns the agent's history, without touching the agent.

    Raises:
        ValueError: the agent has more than one in-memory or durable history provider.
    """
    providers = list(getattr(agent, "context_providers", []) or [])
    if resolve_store(agent):
        return HistoryPlan("service", tuple(providers), None)
    replaceable = [
        index
        for index, provider in enumerate(providers)
        if type(provider) is InMemoryHistoryProvider or isinstance(provider, DurableHistoryProvider)
    ]
    if len(replaceable) > 1:
        raise ValueError(
            f"Agent '{agent.name}' has {len(replaceable)} in-memory history providers; the host keeps one durable "
            "transcript per conversation. Keep one InMemoryHistoryProvider (or DurableHistoryProvider)."
        )
    if replaceable:
        index = replaceable[0]
        found = providers[index]
        durable = found if isinstance(found, DurableHistoryProvider) else DurableHistoryProvider.replacing(found)
        providers[index] = durable
        return HistoryPlan("durable", tuple(providers), durable)
    if any(isinstance(provider, HistoryProvider) and provider.load_messages for provider in providers):
        return HistoryPlan("external", tuple(providers), None)
    # Core would append an InMemoryHistoryProvider at run time here; append its durable twin instead.
    durable = DurableHistoryProvider()
    return HistoryPlan("durable", (*providers, durable), durable)
