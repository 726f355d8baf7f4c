"""Durable history: the core history provider whose store is the conversation entity's state.

The entity puts the stored transcript into `session.state[source_id]["messages"]` before a run, the same buffer
core's InMemoryHistoryProvider keeps, so a CompactionProvider edits it unchanged; after the run the buffer is
reconciled back into the stored records by message id. Knows nothing about HTTP or entity batches.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, ClassVar

from agent_framework import (
    EXCLUDE_REASON_KEY,
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    GROUP_ID_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
    AgentResponse,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
)

from .._deps.agent_framework_private import filter_new_messages
from .._records import message_to_record

# Where core's InMemoryHistoryProvider keeps its buffer in its session state slice; compaction edits it there.
BUFFER_KEY = "messages"
# Core's compaction names unnamed messages `msg_{position}`; the host names them the same way.
CORE_ID_PREFIX = "msg_"
# A summary written under a name a stored message holds is renamed `{turn_id}.summary` (`rename_clashing_summaries`).
SUMMARY_ID_SUFFIX = ".summary"
# The exclusion reason core's summarizing strategies write on the messages a summary stands for.
SUMMARIZED_REASON = "summarized"


class DurableHistoryProvider(HistoryProvider):
    """A history provider whose messages live in the durable conversation entity.

    It keeps the working buffer where core's ``InMemoryHistoryProvider`` keeps it
    (``state["messages"]``), so compaction configured with ``history_source_id`` pointing at this
    provider compacts durable history. The host fills and reconciles the buffer around each run.

    Args:
        source_id: The provider's source id; defaults to ``"in_memory"`` so compaction configured for
            core's default provider finds it.
        skip_excluded: Omit messages that compaction marked excluded when loading, as core's provider does.
        load_messages: Whether to load history before a run.
        store_inputs: Whether to store the turn's input messages.
        store_context_messages: Whether to store messages other providers added.
        store_context_from: Only store context messages from these source ids.
        store_outputs: Whether to store the response messages.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = InMemoryHistoryProvider.DEFAULT_SOURCE_ID

    def __init__(
        self,
        source_id: str | None = None,
        *,
        skip_excluded: bool = False,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
    ) -> None:
        super().__init__(
            source_id or self.DEFAULT_SOURCE_ID,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        self.skip_excluded = skip_excluded

    @classmethod
    def replacing(cls, provider: InMemoryHistoryProvider) -> DurableHistoryProvider:
        """A durable provider configured exactly like the in-memory one it replaces."""
        return cls(
            provider.source_id,
            skip_excluded=provider.skip_excluded,
            load_messages=provider.load_messages,
            store_inputs=provider.store_inputs,
            store_context_messages=provider.store_context_messages,
            store_context_from=provider.store_context_from,
            store_outputs=provider.store_outputs,
        )

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """Return the stored messages, copying annotation trees so a run's edits stay in the run."""
        if state is None:
            return []
        messages: list[Message] = state.get(BUFFER_KEY, [])
        if self.skip_excluded:
            messages = [m for m in messages if not m.additional_properties.get(EXCLUDED_KEY, False)]
        # Loaded messages would share nested `_group` dicts with stored ones; a summarizing before_strategy
        # would then write back-links into stored history (design: copy deeply on load).
        return [_detached(m) if m.additional_properties else m for m in messages]

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append the run's new messages to the buffer; the entity persists the buffer after the run."""
        if state is None or not messages:
            return
        existing: list[Message] = state.get(BUFFER_KEY, [])
        new_messages = filter_new_messages(existing, messages)
        if new_messages:
            state[BUFFER_KEY] = [*existing, *new_messages]


def _detached(message: Message) -> Message:
    clone = copy.copy(message)
    clone.additional_properties = copy.deepcopy(message.additional_properties)
    return clone


def assign_transcript_ids(messages: Sequence[Message], stored: Collection[Message] = ()) -> None:
    """Name every message of the transcript that has no id (or a repeated one) the way core's compaction would.

    Core's compaction names an unnamed message `msg_{position}` when it first groups it, or the next free
    `msg_{n}` from the end of the list when that name is taken. The ids feed group ids, summary links and the
    token estimates compaction caches, so naming alike keeps durable history identical to an in-process run.
    The id is stored with the message, so every later load sees the same id whatever the object
    (architecture.md, failure 1). A repeated id is renamed too: the transcript is reconciled by id, so ids must be
    unique.

    Retention deletes, and positions come round again: an id a stored summary still lists among the messages it
    stands for but no stored message holds belonged to a deleted message. It is never given again, and a message
    new in this run (not in `stored`, the messages the run was lent) that core named so is renamed, with its group
    and the links to it, so a summary's list never names a later message (failure 18).
    """
    retired = _retired_ids(stored)
    if retired:
        _rename_reused(messages, stored, retired)
    taken = {message.message_id for message in messages if message.message_id} | retired
    seen: set[str] = set()
    spare = len(messages)
    for position, message in enumerate(messages):
        if message.message_id and message.message_id not in seen:
            seen.add(message.message_id)
            continue
        name = f"{CORE_ID_PREFIX}{position}"
        if name in taken:
            name, spare = _next_free(spare, taken)
        message.message_id = name
        taken.add(name)
        seen.add(name)


def _next_free(spare: int, taken: Collection[str]) -> tuple[str, int]:
    """The first `msg_{n}` from `spare` on that is not taken, and the number to continue from."""
    while f"{CORE_ID_PREFIX}{spare}" in taken:
        spare += 1
    return f"{CORE_ID_PREFIX}{spare}", spare + 1


def _retired_ids(stored: Collection[Message]) -> set[str]:
    """Ids the stored summaries list among the messages they stand for that no stored message holds."""
    listed = {
        message_id
        for message in stored
        if is_compaction_summary(message)
        for message_id in message.additional_properties[GROUP_ANNOTATION_KEY][SUMMARY_OF_MESSAGE_IDS_KEY] or ()
    }
    return listed.difference(message.message_id for message in stored) if listed else set()


def _rename_reused(messages: Sequence[Message], stored: Collection[Message], retired: set[str]) -> None:
    """Rename the new messages holding a retired id; their groups, the links to them and the lists of the summaries
    this run wrote follow. A stored summary's list keeps the retired id: it names the deleted message."""
    loaded = {id(message) for message in stored}
    taken = {message.message_id for message in messages if message.message_id} | retired
    renamed: dict[str, str] = {}
    spare = len(messages)
    for message in messages:
        if id(message) not in loaded and message.message_id in retired and message.message_id not in renamed:
            renamed[message.message_id], spare = _next_free(spare, taken)
            taken.add(renamed[message.message_id])
    if not renamed:
        return
    groups = {f"group_{old}": f"group_{new}" for old, new in renamed.items()}
    for message in messages:
        new = id(message) not in loaded
        if new and message.message_id in renamed:
            message.message_id = renamed[message.message_id]
        group = message.additional_properties.get(GROUP_ANNOTATION_KEY)
        if not isinstance(group, dict):
            continue
        if new and group.get(GROUP_ID_KEY) in groups:
            group[GROUP_ID_KEY] = groups[group[GROUP_ID_KEY]]
        if group.get(SUMMARIZED_BY_SUMMARY_ID_KEY) in renamed:
            group[SUMMARIZED_BY_SUMMARY_ID_KEY] = renamed[group[SUMMARIZED_BY_SUMMARY_ID_KEY]]
        listed = group.get(SUMMARY_OF_MESSAGE_IDS_KEY)
        if new and isinstance(listed, list):
            group[SUMMARY_OF_MESSAGE_IDS_KEY] = [renamed.get(message_id, message_id) for message_id in listed]


def rename_clashing_summaries(messages: Sequence[Message], stored: Collection[Message], turn_id: str) -> None:
    """Give a summary compaction wrote in this turn under a name a stored message holds an id of the turn's own:
    `{turn_id}.summary`, then `.summary2`, ...; its group and the messages it stands for follow the new id.

    Core names a summary from the list's length (`summary_{len(messages)}`) or a group id (`tool_summary_...`),
    which never repeat while nothing is deleted, so in-process core and the host name alike. Retention deletes, and
    the length comes round again: the new summary shares a stored message's id and group, core counts the two as one
    group and includes again what the summary had just excluded, and links would name the wrong summary
    (architecture.md, failure 18). `stored` holds the messages the run was lent; the others are new. The lists of
    what a summary stands for stay as core wrote them.
    """
    loaded = {id(message) for message in stored}
    written = [message for message in messages if id(message) not in loaded and is_compaction_summary(message)]
    if not written:
        return
    # A retired id names a deleted message in a stored summary's list (`assign_transcript_ids`): never given again.
    held = (
        {message.message_id for message in stored} | {_group_id(message) for message in stored} | _retired_ids(stored)
    )
    held.discard(None)
    clashing = [message for message in written if message.message_id in held or _group_id(message) in held]
    if not clashing:
        return
    taken = {message.message_id for message in messages}
    # Ids as the run left them: what a summary stands for is named by these, whichever summary is renamed first.
    named = [(message, message.message_id) for message in messages]
    for number, summary in enumerate(clashing, start=1):
        name = _free_name(f"{turn_id}{SUMMARY_ID_SUFFIX}", number, taken)
        if summary.message_id:
            _link_summary(summary, summary.message_id, name, named)
        group = summary.additional_properties[GROUP_ANNOTATION_KEY]
        if isinstance(group.get(GROUP_ID_KEY), str):
            group[GROUP_ID_KEY] = f"group_{name}"
        summary.message_id = name
        taken.add(name)


def _group_id(message: Message) -> str | None:
    group = message.additional_properties.get(GROUP_ANNOTATION_KEY)
    return group.get(GROUP_ID_KEY) if isinstance(group, dict) else None


def _free_name(stem: str, number: int, taken: Collection[str | None]) -> str:
    name = stem if number == 1 else f"{stem}{number}"
    while name in taken:
        number += 1
        name = f"{stem}{number}"
    return name


def _link_summary(summary: Message, old: str, name: str, named: Sequence[tuple[Message, str | None]]) -> None:
    """Link the messages `summary` stands for (`named`: each message with the id the run left it), linked to its old
    id, to `name`.

    When the old id was a stored message's too, core counted the two as one group and included the messages this
    summary had just excluded again; they are excluded as it wrote.
    """
    sources = set(summary.additional_properties[GROUP_ANNOTATION_KEY].get(SUMMARY_OF_MESSAGE_IDS_KEY) or ())
    for message, message_id in named:
        props = message.additional_properties
        group = props.get(GROUP_ANNOTATION_KEY) if message_id in sources else None
        if message is summary or not isinstance(group, dict) or group.get(SUMMARIZED_BY_SUMMARY_ID_KEY) != old:
            continue
        group[SUMMARIZED_BY_SUMMARY_ID_KEY] = name
        if props.get(EXCLUDE_REASON_KEY) == SUMMARIZED_REASON:
            props[EXCLUDED_KEY] = True


def assign_message_ids(messages: Iterable[Message], turn_id: str, taken: set[str]) -> None:
    """Give every message without an id (or with a duplicate one) an id derived from its turn and order.

    For messages outside a durable transcript (a turn's answer when history lives elsewhere): `{turn_id}.{n}` is
    derived from persisted fields, never from object identity, which changes across cold starts
    (architecture.md, failure 1).
    """
    counter = 0
    for message in messages:
        if message.message_id and message.message_id not in taken:
            taken.add(message.message_id)
            continue
        while f"{turn_id}.{counter}" in taken:
            counter += 1
        message.message_id = f"{turn_id}.{counter}"
        taken.add(message.message_id)


def is_compaction_summary(message: Message) -> bool:
    """Whether compaction wrote this message (a summary standing in for others) rather than the agent."""
    group = message.additional_properties.get(GROUP_ANNOTATION_KEY)
    return isinstance(group, dict) and SUMMARY_OF_MESSAGE_IDS_KEY in group


def delivered_response(response: AgentResponse, turn_id: str) -> AgentResponse:
    """The response as its caller receives it: what the agent produced, every message named.

    Core 1.23 returns the summaries its call-level compaction made of the run's own messages inside the
    response; they belong in the transcript, but a caller must never receive text the agent did not write
    (architecture.md, failure 5). Unnamed messages are named `{turn_id}.{n}` on copies: when history lives with the
    user's own provider or the service, the response's messages may be the very objects that store keeps.
    """
    messages = [message for message in response.messages if not is_compaction_summary(message)]
    if len(messages) == len(response.messages) and all(message.message_id for message in messages):
        return response
    messages = [message if message.message_id else copy.copy(message) for message in messages]
    taken = {message.message_id for message in messages if message.message_id}
    assign_message_ids([message for message in messages if not message.message_id], turn_id, taken)
    delivered = copy.copy(response)
    delivered.messages = messages
    return delivered


def reconcile_by_message_id(
    stored: Sequence[dict[str, Any]],
    buffer: Sequence[Message],
    now_ms: int,
    *,
    agent_name: str | None,
    reuse: Callable[[Message], dict[str, Any] | None] | None = None,
) -> list[dict[str, Any]]:
    """The new stored transcript: the buffer in its order, annotations written onto the record with the same id.

    Matching by id, never by position: strategies insert summaries mid-history, which shifts positions
    (architecture.md, failures 2 and 3). A stored message missing from the buffer is kept after its stored predecessor.
    `reuse` returns the stored record of a message the run left unchanged, so it is not encoded again.
    """
    reused = [reuse(message) for message in buffer] if reuse is not None else []
    if stored and len(reused) >= len(stored) and all(map(operator.is_, stored, reused)):
        # The common turn: every stored message came back unchanged and in order, new ones follow.
        tail = zip(buffer[len(stored) :], reused[len(stored) :], strict=True)
        return [*stored, *(record or message_to_record(message, now_ms, agent_name) for message, record in tail)]
    stored_at = {record["id"]: record["at"] for record in stored}
    in_buffer = {message.message_id for message in buffer}
    kept_after: dict[str | None, list[dict[str, Any]]] = {}
    previous: str | None = None
    for record in stored:
        if record["id"] in in_buffer:
            previous = record["id"]
        else:
            kept_after.setdefault(previous, []).append(record)
    result = list(kept_after.get(None, []))
    for position, message in enumerate(buffer):
        message_record = reused[position] if reused else None
        if message_record is None:
            at: int = stored_at.get(message.message_id, now_ms)
            message_record = message_to_record(message, at, agent_name)
        result.append(message_record)
        result.extend(kept_after.get(message.message_id, []))
    return result
