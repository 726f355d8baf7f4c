"""Who owns an agent's history, decided once at registration: core's store precedence, one test per rung, then each
outcome of the plan. The agent itself is never changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agent_framework import (
    Agent,
    CompactionProvider,
    ContextProvider,
    InMemoryHistoryProvider,
    SlidingWindowStrategy,
)
from apps import make_agent
from chat_clients import ScriptedChatClient
from history_providers import ListHistoryProvider
from parity_fakes import CallLog, ServiceConversations, ServiceStoringChatClient

from agent_host._conversation.history import DurableHistoryProvider
from agent_host._conversation.history_plan import plan_history, resolve_store


class NotesProvider(ContextProvider):
    """A context provider that keeps no history (it would add instructions or retrieved notes)."""

    def __init__(self) -> None:
        super().__init__("notes")


def agent_with(client: Any = None, store: bool | None = None, providers: list[ContextProvider] | None = None) -> Agent:
    kwargs: dict[str, Any] = {}
    if store is not None:
        kwargs["default_options"] = {"store": store}
    if providers is not None:
        kwargs["context_providers"] = providers
    return make_agent(client or ScriptedChatClient(), **kwargs)


def storing_client() -> ServiceStoringChatClient:
    """A model whose service keeps conversations unless told not to; planning never sends it anything."""
    return ServiceStoringChatClient(CallLog(), ServiceConversations())


def compaction() -> CompactionProvider:
    return CompactionProvider(after_strategy=SlidingWindowStrategy(keep_last_groups=4))


# --- resolve_store: one test per rung ------------------------------------------------------------------------------


def test_explicit_store_over_agent_default() -> None:
    agent_stores = agent_with(ScriptedChatClient(), store=True)
    agent_does_not = agent_with(ScriptedChatClient(), store=False)

    assert resolve_store(agent_stores, {"store": False}) is False
    assert resolve_store(agent_does_not, {"store": True}) is True


def test_explicit_store_over_client_default() -> None:
    assert resolve_store(agent_with(storing_client()), {"store": False}) is False
    assert resolve_store(agent_with(ScriptedChatClient()), {"store": True}) is True


def test_agent_default_over_client_default() -> None:
    assert resolve_store(agent_with(storing_client(), store=False)) is False
    assert resolve_store(agent_with(ScriptedChatClient(), store=True)) is True


def test_client_default_when_nothing_says_otherwise() -> None:
    assert resolve_store(agent_with(storing_client())) is True
    assert resolve_store(agent_with(storing_client()), {}) is True


def test_no_store_anywhere_is_false() -> None:
    assert resolve_store(agent_with(ScriptedChatClient())) is False


def test_a_store_of_none_says_nothing_and_falls_through() -> None:
    storing = agent_with(storing_client(), store=False)

    assert resolve_store(storing, {"store": None}) is False
    assert resolve_store(agent_with(storing_client(), store=None), {"store": None}) is True


# --- plan_history: each outcome ------------------------------------------------------------------------------------


def test_a_service_that_stores_keeps_the_history_and_the_providers_stay_as_they_are() -> None:
    in_memory, notes = InMemoryHistoryProvider(), NotesProvider()
    agent = agent_with(storing_client(), providers=[notes, in_memory])

    plan = plan_history(agent)

    assert plan.owner == "service"
    assert plan.durable is None
    assert plan.providers == (notes, in_memory)
    assert plan.providers[1] is in_memory


def test_store_false_on_a_storing_client_keeps_history_in_the_entity() -> None:
    # Failure 10: ignoring store=False on a client that stores by default loses the conversation.
    agent = agent_with(storing_client(), store=False, providers=[InMemoryHistoryProvider()])

    plan = plan_history(agent)

    assert plan.owner == "durable"
    assert isinstance(plan.durable, DurableHistoryProvider)


def test_an_in_memory_provider_is_replaced_in_place_by_its_durable_twin() -> None:
    notes, summarizer = NotesProvider(), compaction()
    in_memory = InMemoryHistoryProvider(
        "team_history", skip_excluded=True, store_context_messages=True, store_context_from={"notes"}
    )
    agent = agent_with(providers=[notes, in_memory, summarizer])

    plan = plan_history(agent)

    assert plan.owner == "durable"
    assert plan.providers[0] is notes and plan.providers[2] is summarizer
    durable = plan.providers[1]
    assert durable is plan.durable and type(durable) is DurableHistoryProvider
    assert (
        durable.source_id,
        durable.skip_excluded,
        durable.load_messages,
        durable.store_inputs,
        durable.store_context_messages,
        durable.store_context_from,
        durable.store_outputs,
    ) == ("team_history", True, True, True, True, {"notes"}, True)


def test_a_durable_provider_the_agent_already_has_is_used_as_it_is() -> None:
    durable = DurableHistoryProvider(skip_excluded=True)
    summarizer = compaction()
    agent = agent_with(providers=[durable, summarizer])

    plan = plan_history(agent)

    assert (plan.owner, plan.durable) == ("durable", durable)
    assert plan.providers == (durable, summarizer)
    assert plan.durable is durable


def test_without_a_history_provider_a_durable_one_is_appended() -> None:
    # Where core would append an InMemoryHistoryProvider at run time (mutating the agent), the plan appends its twin.
    notes = NotesProvider()
    agent = agent_with(providers=[notes])

    plan = plan_history(agent)

    assert plan.owner == "durable"
    assert plan.providers[:-1] == (notes,)
    assert plan.providers[-1] is plan.durable
    assert type(plan.durable) is DurableHistoryProvider and plan.durable.source_id == "in_memory"


def test_an_agent_without_any_provider_gets_a_durable_one() -> None:
    plan = plan_history(agent_with())

    assert plan.owner == "durable"
    assert plan.providers == (plan.durable,)


def test_a_history_provider_that_does_not_load_leaves_the_history_to_the_entity() -> None:
    audit = ListHistoryProvider(load_messages=False)
    agent = agent_with(providers=[audit])

    plan = plan_history(agent)

    assert plan.owner == "durable"
    assert plan.providers[0] is audit and plan.providers[1] is plan.durable


def test_the_agents_own_loading_history_provider_keeps_the_history() -> None:
    own = ListHistoryProvider()
    notes = NotesProvider()
    agent = agent_with(providers=[own, notes])

    plan = plan_history(agent)

    assert plan.owner == "external"
    assert plan.durable is None
    assert plan.providers == (own, notes)


def test_a_subclass_of_the_in_memory_provider_is_the_users_own_and_is_not_replaced() -> None:
    class SharedInMemoryHistoryProvider(InMemoryHistoryProvider):
        """A user's in-memory provider with its own behaviour: the host must not swap it out."""

    own = SharedInMemoryHistoryProvider()

    plan = plan_history(agent_with(providers=[own]))

    assert plan.owner == "external"
    assert plan.providers == (own,)


@pytest.mark.parametrize(
    "providers",
    [
        lambda: [InMemoryHistoryProvider(), InMemoryHistoryProvider("second")],
        lambda: [InMemoryHistoryProvider(), DurableHistoryProvider("durable")],
        lambda: [DurableHistoryProvider(), NotesProvider(), DurableHistoryProvider("again")],
    ],
    ids=["two in-memory", "in-memory and durable", "two durable"],
)
def test_two_in_memory_history_providers_are_refused(providers: Any) -> None:
    agent = agent_with(providers=providers())

    with pytest.raises(ValueError) as caught:
        plan_history(agent)

    assert str(caught.value) == (
        "Agent 'assistant' has 2 in-memory history providers; the host keeps one durable transcript per "
        "conversation. Keep one InMemoryHistoryProvider (or DurableHistoryProvider)."
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda: agent_with(providers=[NotesProvider(), InMemoryHistoryProvider(skip_excluded=True), compaction()]),
        lambda: agent_with(providers=[NotesProvider()]),
        lambda: agent_with(),
        lambda: agent_with(storing_client(), providers=[InMemoryHistoryProvider()]),
        lambda: agent_with(providers=[ListHistoryProvider()]),
    ],
    ids=["replacing", "appending", "no providers", "service", "external"],
)
def test_planning_never_changes_the_agent(build: Any) -> None:
    agent = build()
    providers_list, providers = agent.context_providers, list(agent.context_providers)
    options_dict, options = agent.default_options, copy.deepcopy(agent.default_options)

    plan_history(agent)
    plan_history(agent)

    assert agent.context_providers is providers_list
    assert len(agent.context_providers) == len(providers)
    assert all(now is before for now, before in zip(agent.context_providers, providers, strict=True))
    assert not any(isinstance(provider, DurableHistoryProvider) for provider in agent.context_providers)
    assert agent.default_options is options_dict and agent.default_options == options


def test_each_plan_has_its_own_durable_provider() -> None:
    agent = agent_with(providers=[InMemoryHistoryProvider()])

    first, second = plan_history(agent), plan_history(agent)

    assert first.durable is not second.durable
