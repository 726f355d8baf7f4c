"""One orchestration episode: choose the events to deliver, replay the orchestrator, and decide what it scheduled.

An episode takes an instance's stored history and visible inbox, runs the orchestrator function once over the
history plus an OrchestratorStarted and the chosen events, and turns the actions it returns into history events and
durable messages, which the caller commits in one transaction. Pure apart from calling the orchestrator: it reads
no store and starts no thread.

How task ids are kept in step with the SDK. The SDK numbers a task when the orchestrator yields it (a signal when
it is sent) and replays deterministically, so every action it creates gets the next id in order; a
``*_with_retry`` call also takes an id for each retry timer and each further attempt, at the moment the SDK
processes the failure or the timer. Those ids are the only ones not visible in the actions, so each episode
delivers at most one retry event (an attempt's failure or a retry timer), and delivers it last: the SDK then numbers
the episode's new actions first and the retry's timer or attempt after them, exactly as :class:`Progress` does.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from azure.durable_functions.models.history.HistoryEventType import HistoryEventType

from .log_text import loggable
from .orchestration_protocol import (
    COMPLETION_ID_KEYS,
    FAILURE_EVENT_TYPES,
    Leaf,
    LeafKind,
    OrchestratorResult,
    context_json,
    entity_response_event,
    execution_started_event,
    format_timestamp,
    history_event,
    parse_timestamp,
    read_orchestrator_state,
    result_of_exception,
)
from .orchestration_store import EpisodeCommit, EpisodeInput, InboxRow
from .outbox import (
    ActivityRequest,
    EntityRequest,
    ExecutionCleanup,
    InboxKind,
    InstanceStart,
    Message,
    OrchestrationEvent,
    TimerCancellation,
)

logger = logging.getLogger(__name__)

MAX_CUSTOM_STATUS_BYTES = 16 * 1024
"""The real host refuses a custom status whose UTF-16 JSON is over 16 KB; the local host fails the instance too."""

OrchestratorHandle = Callable[[str], str]
"""What ``get_user_function()`` returns for an orchestrator: context JSON in, orchestrator state JSON out."""


class Role:
    """What an open task id stands for, which decides how its completion is delivered."""

    TASK = "task"
    """An activity or sub-orchestration without retries."""
    ATTEMPT = "attempt"
    """One attempt of a ``*_with_retry`` call: its failure starts a retry timer."""
    TIMER = "timer"
    """A durable timer the orchestrator created."""
    RETRY_TIMER = "retry_timer"
    """The delay after a failed attempt: when it fires, the next attempt is scheduled (or the call fails)."""
    ENTITY = "entity"
    """A ``call_entity`` request, keyed by its request id."""


@dataclass
class ScheduledLeaf:
    """What the engine recorded for one leaf action of the current execution.

    Attributes:
        kind: The leaf's kind (with ``+retry`` for a ``*_with_retry`` call).
        identity: What a replay must schedule again here (see :attr:`Leaf.identity`).
        ids: Task ids it took: one, or for a retried call each attempt and retry timer in turn.
        cancelled: A timer the orchestrator cancelled.
        attempts: Attempts scheduled so far (retried calls).
        max_attempts: ``maxNumberOfAttempts`` (retried calls).
        interval_ms: ``firstRetryIntervalInMilliseconds`` (retried calls).
    """

    kind: str
    identity: str
    ids: list[int] = field(default_factory=list)
    cancelled: bool = False
    attempts: int = 0
    max_attempts: int = 0
    interval_ms: int = 0


@dataclass
class Progress:
    """The engine's record of the current execution, kept with the instance between episodes.

    Attributes:
        started: ExecutionStarted has been delivered.
        next_id: The next task id the SDK will number.
        leaves: Every leaf action scheduled so far, in order.
        open: Tasks waiting for a completion: task id (or entity request id) -> ``[leaf index, role]``.
        delivered: External events delivered so far, by name.
    """

    started: bool = False
    next_id: int = 0
    leaves: list[ScheduledLeaf] = field(default_factory=list)
    open: dict[str, list[Any]] = field(default_factory=dict)
    delivered: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> Progress:
        """Read a stored record (``{}`` for an instance that has not run yet).

        Args:
            text: The stored JSON.

        Returns:
            The record.
        """
        data = json.loads(text or "{}")
        leaves = [ScheduledLeaf(**leaf) for leaf in data.pop("leaves", [])]
        return cls(leaves=leaves, **data)

    def to_json(self) -> str:
        """The record as stored."""
        return json.dumps(asdict(self), separators=(",", ":"))

    def take_id(self) -> int:
        """Number the next task, as the SDK does."""
        task_id = self.next_id
        self.next_id += 1
        return task_id


@dataclass(frozen=True)
class AppFunctions:
    """The names the app defines, which decide whether a scheduled call can run at all.

    Attributes:
        orchestrators: Lower-cased name -> the registered orchestrator name.
        activities: Lower-cased name -> the registered activity name.
        entities: Lower-cased entity names.
    """

    orchestrators: dict[str, str]
    activities: dict[str, str]
    entities: frozenset[str]


def _leaf_kind(leaf: Leaf) -> str:
    """The kind recorded for a leaf: a retried call differs from a plain one (its ids differ)."""
    return f"{leaf.kind.value}+retry" if leaf.retry is not None else leaf.kind.value


def _completion_key(event: dict[str, Any]) -> str | None:
    """The open-task key a completion event names (a task id, or an entity request id)."""
    key_field = COMPLETION_ID_KEYS.get(event.get("EventType", -1))
    return None if key_field is None else str(event.get(key_field))


def parse_entity_id(scheduler_id: str) -> tuple[str, str]:
    """Split the ``@name@key`` form of an entity id; the key may itself contain ``@``.

    Args:
        scheduler_id: For example ``@counter@k1``.

    Returns:
        The lower-cased name and the key.

    Raises:
        ValueError: If the text is not of that form.
    """
    name, separator, key = scheduler_id.removeprefix("@").partition("@")
    if not scheduler_id.startswith("@") or not separator or not name or not key:
        raise ValueError(f"{scheduler_id!r} is not an entity id of the form @name@key")
    return name.lower(), key


def plan_episode(
    episode: EpisodeInput,
    *,
    now_ms: int,
    orchestrator: OrchestratorHandle | None,
    functions: AppFunctions,
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
) -> EpisodeCommit | None:
    """Plan one episode of an instance.

    Args:
        episode: The instance, its history and its visible inbox.
        now_ms: The episode's time: the OrchestratorStarted timestamp, hence ``current_utc_datetime``.
        orchestrator: The orchestrator function's handle; None when the app no longer defines it.
        functions: The names the app defines.
        new_id: Makes request and execution ids.

    Returns:
        What to commit, or None when no inbox row can be delivered yet (nothing to do).
    """
    return _Episode(episode, now_ms, orchestrator, functions, new_id).plan()


class _Episode:
    """The work of :func:`plan_episode`, one method per step."""

    def __init__(
        self,
        episode: EpisodeInput,
        now_ms: int,
        orchestrator: OrchestratorHandle | None,
        functions: AppFunctions,
        new_id: Callable[[], str],
    ) -> None:
        """Start from the stored instance; nothing changes until :meth:`plan` runs."""
        self.instance = episode.instance
        self.played = episode.played
        self.inbox = episode.inbox
        self.now = now_ms
        self.orchestrator = orchestrator
        self.functions = functions
        self.new_id = new_id
        self.progress = Progress.from_json(self.instance.progress)
        self.consumed: list[int] = []
        self.history: list[dict[str, Any]] = []
        self.messages: list[Message] = []
        self.status = self.instance.status
        self.output: str | None = self.instance.output
        self.custom_status: str | None = None
        self.execution_id = self.instance.execution_id
        self.input = self.instance.input
        self.reset_history = False
        self.leaves: list[Leaf] = []

    # -- choosing what to deliver -------------------------------------------------------------------------------

    def plan(self) -> EpisodeCommit | None:
        """Run the episode, or return None when there is nothing to deliver."""
        if self.instance.is_terminal:
            self.consumed = [row.seq for row in self.inbox]  # late completions and events of a finished instance
            return self._commit() if self.consumed else None
        terminate = next((row for row in self.inbox if row.kind is InboxKind.TERMINATE), None)
        if terminate is not None:
            return self._terminate(terminate)
        if not self.progress.started:
            delivered, retry = self._select_start(), None
        else:
            delivered, retry = self._select_events()
        if not delivered and retry is None:
            return self._commit() if self.consumed else None
        self._deliver(delivered)
        events = [row.event for row in delivered] + ([retry.event] if retry is not None else [])
        result = self._run(events)
        self.leaves = result.leaves
        if not result.sdk_failure:
            problem = self._check_determinism(result.leaves) or self._check_supported(result.leaves)
            if problem is not None:
                return self._finish_failed(problem, result)
            self._cancel_timers(result.leaves)
            self._schedule(result.leaves[len(self.progress.leaves) :])
            if retry is not None:
                self._advance_retry(retry)
        return self._conclude(result)

    def _select_start(self) -> list[InboxRow]:
        """The first episode delivers ExecutionStarted alone."""
        for row in self.inbox:
            if row.kind is InboxKind.START:
                if row.execution_id == self.execution_id:
                    self.consumed.append(row.seq)
                    return [row]
                self.consumed.append(row.seq)  # the start of an execution that was replaced
        return []

    def _select_events(self) -> tuple[list[InboxRow], InboxRow | None]:
        """Choose the inbox rows to deliver now, in arrival order, and at most one retry event (delivered last).

        Completions of tasks that are not open (duplicates of at-least-once delivery, stale executions) are
        discarded, so the SDK never sees a completion twice. An external event waits in the inbox until the
        orchestrator waits for its name (the SDK would otherwise park it with a warning and replay it twice).
        """
        waits = Counter(leaf.identity for leaf in self.progress.leaves if leaf.kind == LeafKind.EXTERNAL_EVENT.value)
        outstanding = {name: count - self.progress.delivered.get(name, 0) for name, count in waits.items()}
        chosen: list[InboxRow] = []
        retry: InboxRow | None = None
        taken: set[str] = set()
        for row in self.inbox:
            if row.kind is InboxKind.EVENT:
                name = str(row.event.get("Name"))
                if outstanding.get(name, 0) > 0:
                    outstanding[name] -= 1
                    chosen.append(row)
                continue
            key = _completion_key(row.event)
            task = self.progress.open.get(key) if key is not None else None
            if row.kind is InboxKind.START or row.execution_id != self.execution_id or task is None or key in taken:
                self.consumed.append(row.seq)
                continue
            role = task[1]
            failed = row.event.get("EventType") in FAILURE_EVENT_TYPES
            if (role == Role.ATTEMPT and failed) or role == Role.RETRY_TIMER:
                if retry is None:
                    retry = row
                    taken.add(str(key))
                continue  # any further retry event waits for a later episode
            taken.add(str(key))
            chosen.append(row)
        if retry is not None:
            self.consumed.append(retry.seq)
        return chosen, retry

    def _deliver(self, rows: list[InboxRow]) -> None:
        """Mark delivered rows consumed and their tasks no longer open."""
        for row in rows:
            if row.seq not in self.consumed:
                self.consumed.append(row.seq)
            if row.kind is InboxKind.EVENT:
                name = str(row.event.get("Name"))
                self.progress.delivered[name] = self.progress.delivered.get(name, 0) + 1
            elif row.kind is InboxKind.START:
                self.progress.started = True
            else:
                self.progress.open.pop(str(_completion_key(row.event)), None)

    # -- running the orchestrator -------------------------------------------------------------------------------

    def _run(self, events: list[dict[str, Any]]) -> OrchestratorResult:
        """Replay the orchestrator over the history, a new OrchestratorStarted and the delivered events."""
        started = history_event(HistoryEventType.ORCHESTRATOR_STARTED, self.now)
        self.history.append(started)
        self.history.extend(events)
        if self.orchestrator is None:
            message = f"the app no longer defines the orchestrator function {self.instance.name!r}"
            return OrchestratorResult(False, [], None, message, None, sdk_failure=True)
        context = context_json(
            played=self.played,
            new_events=[started, *events],
            instance_id=self.instance.instance_id,
            input_text=self.input,
            parent_instance_id=self.instance.parent_instance_id,
        )
        try:
            return read_orchestrator_state(self.orchestrator(context))
        except Exception as exc:  # the user's code raised (the state rides in the message), or the SDK failed
            return result_of_exception(exc)

    def _check_determinism(self, leaves: list[Leaf]) -> str | None:
        """Compare the actions with what earlier episodes scheduled; a difference fails the instance."""
        for position, recorded in enumerate(self.progress.leaves):
            if position >= len(leaves):
                return (
                    f"Non-deterministic orchestrator: its history has {recorded.kind.replace('_', ' ')} "
                    f"{recorded.identity!r} as action {position + 1}, but this replay stopped after {len(leaves)} "
                    "actions. An orchestrator must make the same calls in the same order on every replay: was it "
                    "changed while this instance was running, or does it use datetime.now(), random, uuid4() or I/O?"
                )
            leaf = leaves[position]
            if _leaf_kind(leaf) != recorded.kind or leaf.identity != recorded.identity:
                return (
                    f"Non-deterministic orchestrator: action {position + 1} is {leaf.kind.value.replace('_', ' ')} "
                    f"{leaf.identity!r} in this replay, but its history has {recorded.kind.replace('_', ' ')} "
                    f"{recorded.identity!r}. An orchestrator must make the same calls in the same order on every "
                    "replay: was it changed while this instance was running, or does it use datetime.now(), random, "
                    "uuid4() or I/O?"
                )
        return None

    def _check_supported(self, leaves: list[Leaf]) -> str | None:
        """Refuse actions the local host cannot carry out, naming them."""
        for leaf in leaves[len(self.progress.leaves) :]:
            if leaf.kind is LeafKind.CALL_HTTP:
                url = (leaf.action.get("httpRequest") or {}).get("uri")
                return (
                    f"context.call_http({url!r}) is not supported by the local host (python -m agent_host serve): "
                    "it does not run the durable HTTP feature. Make the HTTP call in an activity function, or run "
                    "this app with Azure Functions Core Tools or on Azure."
                )
            if leaf.kind is LeafKind.UNSUPPORTED:
                return f"The orchestrator returned {leaf.describe}, which the local host does not support."
        return None

    # -- scheduling ---------------------------------------------------------------------------------------------

    def _cancel_timers(self, leaves: list[Leaf]) -> None:
        """Delete the timers the orchestrator cancelled since the last episode, so they never fire."""
        for recorded, leaf in zip(self.progress.leaves, leaves, strict=False):
            if recorded.kind != LeafKind.TIMER.value or recorded.cancelled or not leaf.is_cancelled_timer:
                continue
            recorded.cancelled = True
            timer_id = recorded.ids[0]
            self.progress.open.pop(str(timer_id), None)
            self.messages.append(TimerCancellation(self.instance.instance_id, self.execution_id, timer_id))

    def _schedule(self, leaves: list[Leaf]) -> None:
        """Give each new action its task id and turn it into history events and messages."""
        for leaf in leaves:
            recorded = ScheduledLeaf(_leaf_kind(leaf), leaf.identity)
            index = len(self.progress.leaves)
            self.progress.leaves.append(recorded)
            if leaf.kind is LeafKind.EXTERNAL_EVENT:
                continue  # waits take no task id; the event is delivered when it arrives
            task_id = self.progress.take_id()
            recorded.ids.append(task_id)
            if leaf.kind in (LeafKind.ACTIVITY, LeafKind.SUB_ORCHESTRATION):
                if leaf.retry is not None:
                    recorded.max_attempts = leaf.retry.max_attempts
                    recorded.interval_ms = leaf.retry.first_interval_ms
                self._start_attempt(leaf, index, task_id)
            elif leaf.kind is LeafKind.TIMER:
                self._create_timer(leaf, index, task_id)
            elif leaf.kind in (LeafKind.CALL_ENTITY, LeafKind.SIGNAL_ENTITY):
                self._send_to_entity(leaf, index, task_id)

    def _start_attempt(self, leaf: Leaf, index: int, task_id: int) -> None:
        """Schedule an activity or a sub-orchestration (or one attempt of a retried one)."""
        recorded = self.progress.leaves[index]
        recorded.attempts += 1
        self.progress.open[str(task_id)] = [index, Role.ATTEMPT if leaf.retry is not None else Role.TASK]
        name = str(leaf.action.get("functionName"))
        input_text = leaf.action.get("input")
        if leaf.kind is LeafKind.ACTIVITY:
            self.history.append(
                history_event(
                    HistoryEventType.TASK_SCHEDULED, self.now, event_id=task_id, Name=name, Version="", Input=input_text
                )
            )
            registered = self.functions.activities.get(name.lower())
            if registered is None:
                self._complete_now(
                    history_event(
                        HistoryEventType.TASK_FAILED,
                        self.now,
                        TaskScheduledId=task_id,
                        Reason=_missing_function(name, "activity", self.functions.activities.values()),
                        Details="",
                    )
                )
                return
            self.messages.append(
                ActivityRequest(self.instance.instance_id, self.execution_id, task_id, registered, input_text, self.now)
            )
            return
        child_id = str(leaf.action.get("instanceId") or "") or self._child_id(task_id)
        self.history.append(
            history_event(
                HistoryEventType.SUB_ORCHESTRATION_INSTANCE_CREATED,
                self.now,
                event_id=task_id,
                Name=name,
                InstanceId=child_id,
                Version=leaf.action.get("version") or "",
                Input=input_text,
            )
        )
        registered = self.functions.orchestrators.get(name.lower())
        if registered is None:
            self._complete_now(
                history_event(
                    HistoryEventType.SUB_ORCHESTRATION_INSTANCE_FAILED,
                    self.now,
                    TaskScheduledId=task_id,
                    Reason=_missing_function(name, "orchestrator", self.functions.orchestrators.values()),
                    Details="",
                )
            )
            return
        self.messages.append(
            InstanceStart(
                instance_id=child_id,
                name=registered,
                version=leaf.action.get("version"),
                execution_id=self.new_id(),
                # Stored as the JSON string of the SDK's encoded input, as the real host stores a client's input.
                input=json.dumps(input_text) if input_text is not None else None,
                at_ms=self.now,
                parent_instance_id=self.instance.instance_id,
                parent_execution_id=self.execution_id,
                parent_task_id=task_id,
            )
        )

    def _child_id(self, task_id: int) -> str:
        """A sub-orchestration id that replay reproduces: derived from the parent, its execution and the task."""
        name = f"{self.instance.instance_id}/{self.execution_id}/{task_id}"
        return uuid.uuid5(uuid.NAMESPACE_URL, name).hex

    def _create_timer(self, leaf: Leaf, index: int, task_id: int) -> None:
        """Record a timer and queue its TimerFired for when it is due (a timer cancelled at once never fires)."""
        fire_at = str(leaf.action.get("fireAt"))
        self.history.append(history_event(HistoryEventType.TIMER_CREATED, self.now, event_id=task_id, FireAt=fire_at))
        if leaf.is_cancelled_timer:
            self.progress.leaves[index].cancelled = True
            return
        self.progress.open[str(task_id)] = [index, Role.TIMER]
        self._queue_timer(task_id, fire_at)

    def _queue_timer(self, task_id: int, fire_at: str) -> None:
        """Put a TimerFired in the inbox, visible when the timer is due."""
        due_ms = parse_timestamp(fire_at)
        self.messages.append(
            OrchestrationEvent(
                self.instance.instance_id,
                self.execution_id,
                InboxKind.TIMER,
                history_event(HistoryEventType.TIMER_FIRED, due_ms, TimerId=task_id, FireAt=fire_at),
                at_ms=self.now,
                visible_ms=due_ms,
                task_id=task_id,
            )
        )

    def _send_to_entity(self, leaf: Leaf, index: int, task_id: int) -> None:
        """Send an entity call or signal; a call's response comes back as an event named by its request id."""
        is_call = leaf.kind is LeafKind.CALL_ENTITY
        scheduler_id = str(leaf.action.get("instanceId"))
        operation = str(leaf.action.get("operation"))
        request_id = self.new_id()
        # Entity functions json.loads their input and then decode it: the action's input travels as JSON text.
        operation_input = json.dumps(leaf.action.get("input"))
        message: dict[str, Any] = {"op": operation, "input": operation_input, "id": request_id}
        if not is_call:
            message["signal"] = True
        message.update(parent=self.instance.instance_id, parentExecution=self.execution_id)
        self.history.append(
            history_event(
                HistoryEventType.EVENT_SENT,
                self.now,
                event_id=task_id,
                InstanceId=scheduler_id,
                Name="op",
                Input=json.dumps(message),
            )
        )
        if is_call:
            self.progress.open[request_id] = [index, Role.ENTITY]
        try:
            name, key = parse_entity_id(scheduler_id)
        except ValueError as exc:
            problem = str(exc)
        else:
            if name in self.functions.entities:
                self.messages.append(
                    EntityRequest(
                        name,
                        key,
                        operation,
                        operation_input,
                        self.now,
                        request_id=request_id if is_call else None,
                        parent_instance_id=self.instance.instance_id,
                        parent_execution_id=self.execution_id,
                    )
                )
                return
            known = ", ".join(sorted(self.functions.entities)) or "none"
            problem = f"The app has no entity function named {name!r} (its entities: {known})."
        if is_call:
            self._complete_now(entity_response_event(request_id, json.dumps(problem), failed=True, at_ms=self.now))
        else:
            logger.error(
                "orchestration %s signalled %s, which cannot be delivered: %s",
                loggable(self.instance.instance_id),
                loggable(scheduler_id),
                problem,
            )

    def _complete_now(self, event: dict[str, Any]) -> None:
        """Queue a completion the host knows at once (a call to a function the app lacks fails like on Azure)."""
        self.messages.append(
            OrchestrationEvent(
                self.instance.instance_id, self.execution_id, InboxKind.COMPLETION, event, self.now, self.now
            )
        )

    def _advance_retry(self, row: InboxRow) -> None:
        """Number the retry timer after a failed attempt, or the next attempt after a retry timer, as the SDK does.

        The SDK always waits for one more timer after a failed attempt, even the last one (it checks the attempt
        count only when that timer fires); then it fails the call with the last attempt's error.
        """
        index, role = self.progress.open.pop(str(_completion_key(row.event)))
        recorded = self.progress.leaves[index]
        task_id = self.progress.take_id() if role == Role.ATTEMPT or recorded.attempts < recorded.max_attempts else None
        if task_id is None:
            return  # attempts exhausted: this timer fails the call in the SDK
        recorded.ids.append(task_id)
        if role == Role.ATTEMPT:
            fire_at = format_timestamp(self.now + recorded.interval_ms)
            self.history.append(
                history_event(HistoryEventType.TIMER_CREATED, self.now, event_id=task_id, FireAt=fire_at)
            )
            self.progress.open[str(task_id)] = [index, Role.RETRY_TIMER]
            self._queue_timer(task_id, fire_at)
            return
        # The replay re-sent the call's action (the SDK sends every action every time): attempt it again.
        self._start_attempt(self.leaves[index], index, task_id)

    # -- concluding ---------------------------------------------------------------------------------------------

    def _conclude(self, result: OrchestratorResult) -> EpisodeCommit:
        """Set the instance's new status from the result and return the commit."""
        if result.custom_status_text is not None:
            size = len(result.custom_status_text.encode("utf-16-le"))
            if size > MAX_CUSTOM_STATUS_BYTES:
                return self._finish_failed(
                    f"The custom status is {size} bytes as UTF-16 JSON, over the {MAX_CUSTOM_STATUS_BYTES}-byte limit "
                    "of the Durable Functions host; set a smaller custom status.",
                    result,
                )
            self.custom_status = result.custom_status_text
        if result.error is not None:
            return self._finish_failed(result.error, result)
        if result.is_done:
            continued = next((leaf for leaf in result.leaves if leaf.kind is LeafKind.CONTINUE_AS_NEW), None)
            if continued is not None:
                return self._continue_as_new(continued)
            return self._finish("Completed", result.output_text or "null")
        self.status = "Running"
        self.history.append(history_event(HistoryEventType.ORCHESTRATOR_COMPLETED, self.now))
        return self._commit()

    def _finish_failed(self, error: str, result: OrchestratorResult) -> EpisodeCommit:
        """Fail the instance; its output is the message the real host reports."""
        if result.custom_status_text is not None and self.custom_status is None:
            self.custom_status = result.custom_status_text
        message = f"Orchestrator function '{self.instance.name}' failed: {error}"
        return self._finish("Failed", json.dumps(message), reason=message)

    def _finish(self, status: str, output_text: str, *, reason: str | None = None) -> EpisodeCommit:
        """End the execution: record it, drop its queued work, and tell the parent of a sub-orchestration."""
        self.status = status
        self.output = output_text
        fields: dict[str, Any] = {"OrchestrationStatus": status, "Result": output_text}
        if reason is not None:
            fields["FailureDetails"] = {"ErrorType": "OrchestrationFailure", "ErrorMessage": reason}
        self.history.append(history_event(HistoryEventType.EXECUTION_COMPLETED, self.now, **fields))
        self.history.append(history_event(HistoryEventType.ORCHESTRATOR_COMPLETED, self.now))
        self.messages.append(ExecutionCleanup(self.instance.instance_id, self.execution_id))
        self._notify_parent(output_text if reason is None else None, reason)
        return self._commit()

    def _notify_parent(self, output_text: str | None, failure: str | None) -> None:
        """Send a sub-orchestration's outcome to its parent's inbox."""
        instance = self.instance
        if instance.parent_instance_id is None or instance.parent_task_id is None:
            return
        if failure is None:
            event = history_event(
                HistoryEventType.SUB_ORCHESTRATION_INSTANCE_COMPLETED,
                self.now,
                TaskScheduledId=instance.parent_task_id,
                Result=output_text,
            )
        else:
            event = history_event(
                HistoryEventType.SUB_ORCHESTRATION_INSTANCE_FAILED,
                self.now,
                TaskScheduledId=instance.parent_task_id,
                Reason=failure,
                Details="",
            )
        self.messages.append(
            OrchestrationEvent(
                instance.parent_instance_id,
                instance.parent_execution_id,
                InboxKind.COMPLETION,
                event,
                self.now,
                self.now,
            )
        )

    def _continue_as_new(self, leaf: Leaf) -> EpisodeCommit:
        """Start a new execution with the given input; its history starts empty, waiting external events carry over."""
        input_text = leaf.action.get("input")
        self.messages.append(ExecutionCleanup(self.instance.instance_id, self.execution_id))
        self.execution_id = self.new_id()
        self.input = json.dumps(input_text) if input_text is not None else None
        self.messages.append(
            OrchestrationEvent(
                self.instance.instance_id,
                self.execution_id,
                InboxKind.START,
                execution_started_event(
                    self.now,
                    name=self.instance.name,
                    version=self.instance.version,
                    input_text=self.input,
                    instance_id=self.instance.instance_id,
                    execution_id=self.execution_id,
                    parent_instance_id=self.instance.parent_instance_id,
                    parent_task_id=self.instance.parent_task_id,
                ),
                self.now,
                self.now,
            )
        )
        self.progress = Progress()
        self.history = []
        self.reset_history = True
        self.status = "Running"
        return self._commit()

    def _terminate(self, row: InboxRow) -> EpisodeCommit:
        """Terminate the instance (without running its code); everything still in its inbox is dropped."""
        reason = row.event.get("Input")
        self.consumed = [r.seq for r in self.inbox]
        self.history.append(history_event(HistoryEventType.ORCHESTRATOR_STARTED, self.now))
        self.history.append(history_event(HistoryEventType.EXECUTION_TERMINATED, self.now, Input=reason))
        message = f"Orchestration instance '{self.instance.instance_id}' was terminated: {reason}"
        self.status = "Terminated"
        self.output = json.dumps(reason)
        self.history.append(
            history_event(
                HistoryEventType.EXECUTION_COMPLETED, self.now, OrchestrationStatus="Terminated", Result=self.output
            )
        )
        self.history.append(history_event(HistoryEventType.ORCHESTRATOR_COMPLETED, self.now))
        self.messages.append(ExecutionCleanup(self.instance.instance_id, self.execution_id))
        self._notify_parent(None, message)
        return self._commit()

    def _commit(self) -> EpisodeCommit:
        """Package the episode's changes."""
        return EpisodeCommit(
            instance_id=self.instance.instance_id,
            execution_id=self.instance.execution_id,
            consumed=self.consumed,
            history=self.history,
            reset_history=self.reset_history,
            status=self.status,
            new_execution_id=self.execution_id,
            input=self.input,
            output=self.output,
            custom_status=self.custom_status,
            progress=self.progress.to_json(),
            updated_ms=self.now,
            messages=self.messages,
        )


def _missing_function(name: str, kind: str, known: Any) -> str:
    """The failure the real host reports for a call to a function the app does not define."""
    names = ", ".join(sorted(known)) or "none"
    return (
        f"The function '{name}' doesn't exist, is disabled, or is not an {kind} function. "
        f"The app's {kind} functions: {names}."
    )
