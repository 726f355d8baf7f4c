"""Checkpointed turns: each model response and tool result of a running turn goes to its journal before the next step,
and a re-run of the turn (redelivery after a crash) replays them instead of calling the model or the tool again.

Installed on the entity's copy of a core `Agent`: the model calls are journaled at the client's innermost seam
(`_inner_get_response`, below core's call-level compaction, so compaction runs on replay exactly as it ran), and the
tools by the innermost function middleware. Replay hands core the very response or result it got the first time,
so core builds the same transcript. A store that fails makes the rest of the turn run unjournaled, as before.
Knows core's client and middleware seams, the journal, and the one state key listing journals; nothing of HTTP.
"""

from __future__ import annotations

import copy
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from agent_framework import (
    Agent,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionMiddleware,
    FunctionTool,
    MiddlewareException,
    ResponseStream,
    SupportsAgentRun,
)
from agent_framework.exceptions import UserInputRequiredException
from pydantic import BaseModel

from .._streaming.journal import MODEL_RESPONSE, TOOL_RESULT, TOOL_STARTED, JournalEntries, TurnJournal, tool_key
from .._telemetry import telemetry
from .state import JOURNALED_TURNS_KEY, StoredState

logger = logging.getLogger("agent_host.checkpoints")

SAFE_TO_REPEAT_KEY = "safe_to_repeat"
"""The tool's `additional_properties` flag saying that running it twice does no harm (set by `safe_to_repeat`)."""
MAY_HAVE_RUN_REASON = (
    "The tool may already have run: the host stopped after the model asked for it and before its result was saved. "
    "Approve to run it again, or decline if it did run."
)
"""The `reason` of the approval request a re-run turn asks for a tool it cannot tell has run."""

ToolT = TypeVar("ToolT", bound=FunctionTool)
# What core raises through function middleware to steer the run (end it, fail it, ask the user), not tool failures.
_CONTROL_FLOW = (MiddlewareException, UserInputRequiredException)


def safe_to_repeat(tool: ToolT) -> ToolT:
    """Mark a tool as safe to run again when a turn is re-run after a crash while the tool may have been running.

    A checkpointed turn replays the tools it journaled as finished. A tool call whose result was not saved may have
    run (a journaled model response asked for it, or its start was journaled): the re-run asks the caller (an
    approval request saying so) unless the tool is marked safe to repeat, when it simply runs again. Use it for
    tools without side effects, or idempotent ones::

        @safe_to_repeat
        @tool
        def get_weather(city: str) -> str: ...

    Returns:
        The same tool, marked (`additional_properties["safe_to_repeat"]`).

    Raises:
        TypeError: `tool` is not an agent-framework tool (apply `@tool` first).
    """
    if not isinstance(tool, FunctionTool):
        raise TypeError(f"safe_to_repeat marks agent-framework tools; apply @tool first, got {type(tool).__name__}.")
    tool.additional_properties = {**(tool.additional_properties or {}), SAFE_TO_REPEAT_KEY: True}
    return tool


# The turns each batch of entity operations ran, by the host's context of that batch: their commit is not certain
# until the batch is committed, so their journals must outlive it (Durable Functions has no after-commit hook).
_BATCH_TURNS: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def settled_journals(batch: Any, state: StoredState) -> list[str]:
    """The turns whose journals can go now: listed in `state` and committed by an earlier batch than `batch`."""
    ran = _BATCH_TURNS.get(batch, set())
    return [turn_id for turn_id in state.get(JOURNALED_TURNS_KEY, ()) if turn_id not in ran]


def list_journal(batch: Any, state: StoredState, turn_id: str, *, journaled: bool, settled: list[str]) -> None:
    """Record in `state` (in place) that `batch` ran `turn_id`, with a journal when `journaled`, and that the
    journals of `settled` turns are gone."""
    _BATCH_TURNS.setdefault(batch, set()).add(turn_id)
    listed = [known for known in state.get(JOURNALED_TURNS_KEY, ()) if known not in settled and known != turn_id]
    if journaled:
        listed.append(turn_id)
    if listed:
        state[JOURNALED_TURNS_KEY] = listed
    else:
        state.pop(JOURNALED_TURNS_KEY, None)


class ReplayedToolError(Exception):
    """A tool's failure as journaled, raised again on replay so core reports it as it did the first time."""


class TurnCheckpoints:
    """One run of one turn, journaled and replayed.

    Args:
        journal: The turn's journal.
        agent_name: The agent, for logs and metrics.
    """

    def __init__(self, journal: TurnJournal, agent_name: str) -> None:
        self.journal = journal
        self.agent_name = agent_name
        self._calls = 0
        # The model calls answered from a journal an earlier run wrote: the tool calls they asked for may have run.
        self._replayed: set[int] = set()
        self._broken = False

    def install(self, agent: SupportsAgentRun) -> None:
        """Journal the model calls and tools of the entity's copy `agent`; one that is not a core `Agent` runs
        unjournaled (logged, counted).

        The copy gets its own copy of the chat client and its own middleware list: the caller's objects are
        never changed.
        """
        if not isinstance(agent, Agent):
            logger.info("Agent %r is not a core Agent; its turns run without checkpoints.", self.agent_name)
            self._count_unavailable("unsupported_agent")
            return
        client: Any = copy.copy(agent.client)
        client._inner_get_response = self._model_calls(client._inner_get_response)
        agent.client = client
        agent.middleware = [*(agent.middleware or []), _ToolJournal(self)]

    def _model_calls(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        """`inner` (one model call), replayed from the journal when it holds this call's response."""

        def call(*, messages: Any, stream: bool, options: Mapping[str, Any], **kwargs: Any) -> Any:
            self._calls += 1
            number = self._calls
            if stream:
                return ResponseStream.from_awaitable(self._streamed_call(inner, number, messages, options, kwargs))
            return self._call(inner, number, messages, options, kwargs)

        return call

    async def _call(
        self, inner: Callable[..., Any], number: int, messages: Any, options: Mapping[str, Any], kwargs: dict[str, Any]
    ) -> ChatResponse:
        recorded = await self._recorded(number)
        if recorded is not None:
            return _response_from(recorded)
        response: ChatResponse = await inner(messages=messages, stream=False, options=options, **kwargs)
        await self._write(MODEL_RESPONSE, _response_entry(number, response))
        return response

    async def _streamed_call(
        self, inner: Callable[..., Any], number: int, messages: Any, options: Mapping[str, Any], kwargs: dict[str, Any]
    ) -> ResponseStream[Any, ChatResponse]:
        recorded = await self._recorded(number)
        if recorded is not None:
            updates = [ChatResponseUpdate.from_dict(update) for update in recorded.get("updates", [])]
            return _replayed_stream(updates, _response_from(recorded))
        started = inner(messages=messages, stream=True, options=options, **kwargs)
        stream: ResponseStream[Any, ChatResponse] = started if isinstance(started, ResponseStream) else await started
        # A streamed run's answer is built from the updates, not the final response: both are journaled.
        seen: list[ChatResponseUpdate] = []

        def keep(update: ChatResponseUpdate) -> ChatResponseUpdate:
            seen.append(update)
            return update

        async def journal(response: ChatResponse) -> None:
            entry = _response_entry(number, response)
            entry["updates"] = [update.to_dict() for update in seen]
            await self._write(MODEL_RESPONSE, entry)

        return stream.with_transform_hook(keep).with_result_hook(journal)

    async def _recorded(self, number: int) -> dict[str, Any] | None:
        """The journal entry of model call `number`, or None when the journal does not hold it."""
        entries = await self._entries()
        entry = entries.responses.get(number) if entries is not None else None
        if entry is not None:
            self._replayed.add(number)
            self._count_replayed("model")
        return entry

    async def tool_step(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        """Run one tool call: its journaled result, an approval request when it may have run, or the tool."""
        call_id = context.metadata.get("call_id")
        entries = await self._entries() if isinstance(call_id, str) else None
        if entries is None or not isinstance(call_id, str):
            await call_next()
            return
        # Keyed by the model call that asked too: some services number their calls anew in every response.
        key = tool_key(self._calls, call_id)
        result = entries.results.get(key)
        if result is not None:
            self._count_replayed("tool")
            if "error" in result:
                raise ReplayedToolError(result["error"])
            context.result = [Content.from_dict(item) for item in result["contents"]]
            return
        repeatable = (context.function.additional_properties or {}).get(SAFE_TO_REPEAT_KEY)
        if self._may_have_run(entries, key) and not repeatable:
            logger.warning(
                "Tool %r (call %s) of a re-run turn of %s may have run before the crash and saved no result; asking "
                "the caller whether to run it again.",
                context.function.name,
                call_id,
                self.agent_name,
            )
            context.result = _may_have_run_request(context, call_id)
            return
        step = {"callId": call_id, "afterCall": self._calls}
        if self._calls not in entries.responses:
            # No journaled response asked for this call (the turn's input approved it): its start is the only
            # evidence a re-run would have that it may have run.
            await self._write(TOOL_STARTED, {**step, "tool": context.function.name})
        try:
            await call_next()
        except _CONTROL_FLOW:
            raise  # core's own signals are not results: a re-run asks about the tool as about one in flight
        except Exception as exc:
            await self._write(TOOL_RESULT, {**step, "error": str(exc)})
            raise
        contents = FunctionTool.parse_result(context.result)
        await self._write(TOOL_RESULT, {**step, "contents": [item.to_dict() for item in contents]})
        context.result = contents

    def _may_have_run(self, entries: JournalEntries, key: str) -> bool:
        """Whether the tool call `key`, whose result the journal does not hold, may have run before this run: the
        model response that asked for it was journaled by an earlier run (the tools it asked for are started
        right after it is journaled), or its start was (an approved call; every call, for older writers)."""
        return self._calls in self._replayed or key in entries.started

    async def _entries(self) -> JournalEntries | None:
        """The journal's entries by kind, or None once the journal failed (the turn then runs unjournaled)."""
        if self._broken:
            return None
        try:
            entries = await self.journal.entries()
        except Exception as exc:
            self._give_up("read", exc)
            return None
        return entries

    async def _write(self, event: str, data: dict[str, Any]) -> None:
        if self._broken:
            return
        try:
            json.dumps(data, allow_nan=False)
            await self.journal.write(event, data)
        except Exception as exc:
            self._give_up("write", exc)

    def _give_up(self, action: str, exc: Exception) -> None:
        """Stop journaling this run: the turn goes on as an unjournaled turn would (logged, counted)."""
        self._broken = True
        logger.warning(
            "Could not %s the journal of a turn of %s (%s); the rest of the turn runs without checkpoints.",
            action,
            self.agent_name,
            f"{type(exc).__name__}: {exc}"[:300],
        )
        self._count_unavailable(f"journal_{action}_failed")

    def _count_replayed(self, step: str) -> None:
        telemetry().record_checkpoint_replay(agent=self.agent_name, step=step)

    def _count_unavailable(self, reason: str) -> None:
        telemetry().record_checkpoint_unavailable(agent=self.agent_name, reason=reason)


class _ToolJournal(FunctionMiddleware):
    """The innermost function middleware of a checkpointed turn: journals and replays each tool call."""

    def __init__(self, checkpoints: TurnCheckpoints) -> None:
        self.checkpoints = checkpoints

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        await self.checkpoints.tool_step(context, call_next)


def _response_entry(number: int, response: ChatResponse) -> dict[str, Any]:
    """The journal entry of model call `number`: the whole response core got, its own properties included."""
    return {"call": number, "response": response.to_dict(), "properties": dict(response.additional_properties)}


def _response_from(entry: dict[str, Any]) -> ChatResponse:
    """The response a journal entry holds, its own properties restored (`to_dict` leaves them out)."""
    response = ChatResponse.from_dict(entry["response"])
    response.additional_properties = dict(entry.get("properties") or {})
    return response


def _replayed_stream(updates: list[ChatResponseUpdate], response: ChatResponse) -> ResponseStream[Any, ChatResponse]:
    """A journaled streamed model call: the same updates, at once, then the same response."""

    async def replay() -> Any:
        for update in updates:
            yield update

    return ResponseStream(replay(), finalizer=lambda _: response)


def _may_have_run_request(context: FunctionInvocationContext, call_id: str) -> Content:
    """The approval request for a tool call that may have run: the call as the model made it, and why."""
    arguments = context.arguments
    if isinstance(arguments, BaseModel):
        arguments = arguments.model_dump(mode="json")
    occurrence = context.metadata.get("function_call_occurrence_id")
    call = Content.from_function_call(
        call_id=call_id,
        name=context.function.name,
        arguments=dict(arguments) if isinstance(arguments, Mapping) else arguments,
        id=occurrence if isinstance(occurrence, str) else None,
    )
    return Content.from_function_approval_request(
        id=call.id or call_id, function_call=call, additional_properties={"reason": MAY_HAVE_RUN_REASON}
    )
