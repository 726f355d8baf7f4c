"""The name an agent is hosted under, checked once for every host: routes, entity names and entity id budgets."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from agent_framework import SupportsAgentRun

from ._contract import LONGEST_GENERATED_CONVERSATION_ID, conversation_id_limit

logger = logging.getLogger("agent_host.app")

AGENT_NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


def entity_name_for(agent_name: str) -> str:
    """The entity (and function) name of an agent's conversations; the host lower-cases entity names.

    HTTP functions are named `api_*`, so no agent name can make an entity clash with a route function.
    """
    return f"conversation_{agent_name.lower()}"


def hosted_agent_name(
    agent: SupportsAgentRun, entity_id: str | None, *, durable_task_scheduler: bool
) -> tuple[str, int]:
    """The name `agent` is registered under (`entity_id`, else its own), and the longest conversation id its
    entities can be keyed by on the backend.

    Raises:
        ValueError: the name is missing, invalid, or too long for the Durable Task Scheduler's entity ids.
    """
    name = entity_id or getattr(agent, "name", None)
    if not name:
        raise ValueError("Every hosted agent needs a name: build it with Agent(..., name='support').")
    if not AGENT_NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"Agent name {name!r} cannot be used in routes and entity names: use 1-64 letters, digits, "
            "'_' or '-', starting with a letter."
        )
    id_limit = conversation_id_limit(entity_name_for(name), durable_task_scheduler=durable_task_scheduler)
    if id_limit < LONGEST_GENERATED_CONVERSATION_ID:
        raise ValueError(
            f"Agent name {name!r} is too long for the Durable Task Scheduler: its entity ids would leave "
            f"conversation ids {id_limit} characters, and the host needs {LONGEST_GENERATED_CONVERSATION_ID}. "
            f"Use a name of at most {len(name) - (LONGEST_GENERATED_CONVERSATION_ID - id_limit)} characters."
        )
    return name, id_limit


def is_repeated_registration(
    name: str, agent: SupportsAgentRun, registered: SupportsAgentRun | None, taken: Iterable[str]
) -> bool:
    """Whether `add_agent` was called again for the agent `registered` under `name` (ignored, with a warning).

    Raises:
        ValueError: another agent is registered under the name, in any letter case (entity names are lower-cased).
    """
    if registered is agent:
        logger.warning("Agent %r is already registered; the repeated add_agent call was ignored.", name)
        return True
    clash = next((other for other in taken if other.lower() == name.lower()), None)
    if clash is not None:
        raise ValueError(f"Agent name {name!r} is registered twice (as {clash!r}); give each agent a unique name.")
    return False
