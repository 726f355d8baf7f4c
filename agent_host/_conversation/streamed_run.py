"""A streamed agent run whose answer is the one a non-streamed run gives: core's streaming run, updates handed on.

Core 1.23 merges the summaries its call-level compaction writes back into the response only in non-streamed runs
(its fix for issue 8099): a streamed run returns the uncompacted transcript, which history would then store.
So, when a call-level strategy is in play, the run's strategy is wrapped to see the list core compacts, and the
same reconciliation core applies after each non-streamed model call is applied here at the same points; before
the response reaches the history providers, its messages become the reconciled transcript, as non-streamed.
Knows core's agent and compaction internals named below, nothing about the entity's state or HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent_framework import (
    GROUP_ANNOTATION_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    Message,
    SupportsAgentRun,
)

from .._deps.agent_framework_private import reconcile_compaction_summaries, response_finalizer, set_response_finalizer

logger = logging.getLogger("agent_host.entity")

UpdateSink = Callable[[AgentResponseUpdate], Awaitable[None]]
"""Receives each update of a streamed run, in order."""


async def run_streamed(
    agent: SupportsAgentRun,
    messages: Sequence[Message],
    *,
    session: AgentSession,
    on_update: UpdateSink,
    **options: Any,
) -> AgentResponse:
    """Run `agent` streaming, hand every update to `on_update`, and return the final response.

    `agent` is the entity's own copy of the user's agent: the summary capture is installed on it, never on the
    user's object.
    """
    capture = SummaryCapture.install(agent)
    stream = agent.run(list(messages), session=session, stream=True, **options)
    async for update in stream:
        await on_update(update)
    response = await stream.get_final_response()
    if capture is not None and capture.unmatched:
        logger.warning(
            "A streamed run's compaction summaries could not be merged into its response; its transcript is "
            "stored as core's streaming run returns it (uncompacted)."
        )
    return response


class SummaryCapture:
    """A call-level compaction strategy wrapped to reconcile its summaries into a streamed run's transcript.

    Core compacts one working list per run (its copies of the inputs, then each model turn's messages) in place.
    Before each model call, after the strategy ran, non-streamed core reconciles the summaries rooted in the run's
    own messages into the transcript it returns; this wrapper does the same, one call later (after the model was
    sent its input, as core does), and once more when the run is finalized.

    Args:
        strategy: The strategy the run would use.
    """

    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy
        self.transcript: list[Message] = []
        self.unmatched = False
        self._inputs: set[int] | None = None
        self._kept: set[int] = set()
        self._working: list[Message] | None = None

    @classmethod
    def install(cls, agent: SupportsAgentRun) -> SummaryCapture | None:
        """Wrap the call-level strategy a core `Agent` copy would use (its own, else its client's), if any."""
        if not isinstance(agent, Agent):
            return None
        strategy = agent.compaction_strategy or getattr(agent.client, "compaction_strategy", None)
        if strategy is None:
            return None
        capture = cls(strategy)
        finalize = response_finalizer(agent)

        def finalize_with_summaries(
            updates: Sequence[AgentResponseUpdate], *, response_format: Any | None = None
        ) -> AgentResponse[Any]:
            response = finalize(updates, response_format=response_format)
            response.messages = capture.merged(response.messages)
            return response

        # The copy's own attributes: the per-run strategy, and the finalizer that builds the response the history
        # providers are handed (core calls it through the agent, before their after_run hooks).
        agent.compaction_strategy = capture
        set_response_finalizer(agent, finalize_with_summaries)
        return capture

    @property
    def tokenizer(self) -> Any:
        """The wrapped strategy's tokenizer, which core reads from the strategy it is given."""
        return getattr(self.strategy, "tokenizer", None)

    async def __call__(self, messages: list[Message]) -> bool:
        """Compact `messages` with the wrapped strategy, after settling what the previous call left to reconcile."""
        if self._inputs is None:
            self._inputs = {id(message) for message in messages}
        self._settle()
        for message in messages:
            if id(message) not in self._inputs and id(message) not in self._kept and not _is_summary(message):
                self.transcript.append(message)
                self._kept.add(id(message))
        changed = bool(await self.strategy(messages))
        self._working = messages
        return changed

    def merged(self, streamed: list[Message]) -> list[Message]:
        """The streamed response's messages with the run's own messages as core compacted them, summaries included.

        The run's messages before its last model turn are found in the streamed response by role and content; the
        ones around them (answers to approvals before, the last model turn after) stay as streamed.
        """
        self._settle()
        own = [message for message in self.transcript if not _is_summary(message)]
        if not own:
            return streamed
        for start in range(len(streamed) - len(own) + 1):
            if all(_same(a, b) for a, b in zip(own, streamed[start : start + len(own)], strict=True)):
                return [*streamed[:start], *self.transcript, *streamed[start + len(own) :]]
        self.unmatched = True
        return streamed

    def _settle(self) -> None:
        if self._working is None:
            return
        reconcile_compaction_summaries(self.transcript, self._working, {id(message) for message in self.transcript})
        self._kept.update(id(message) for message in self.transcript)
        self._working = None


def _is_summary(message: Message) -> bool:
    group = message.additional_properties.get(GROUP_ANNOTATION_KEY)
    return isinstance(group, dict) and SUMMARY_OF_MESSAGE_IDS_KEY in group


def _same(ours: Message, streamed: Message) -> bool:
    """Whether a message of the run and one of the streamed response are the same message (role and contents)."""
    return str(ours.role) == str(streamed.role) and _contents(ours) == _contents(streamed)


def _contents(message: Message) -> list[tuple[Any, ...]]:
    return [(c.type, c.text, c.call_id, c.name) for c in message.contents]
