"""Runs orchestrations on the local host: episodes one at a time per instance, activities in parallel, timers when due.

Episodes and activities run on worker threads, never on the event loop, each on a keyed work engine
(``work_engine``: episodes keyed by instance, activities by their queue row). Every step commits in one transaction
with the messages it sends (see ``outbox``), and is announced only after it committed; a crash at any point loses at
most the uncommitted step, which runs again from the same stored inbox when the host starts. Storage errors are
retried with backoff and never fail an orchestration. Time comes from the app's clock, so a test clock drives timers
(:meth:`OrchestrationScheduler.wake` makes the timer loop look at the clock at once).
"""

from __future__ import annotations

import heapq
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from azure.durable_functions.models.history.HistoryEventType import HistoryEventType

from .._clock import SYSTEM_CLOCK, Clock
from .._event_loop import AgentEventLoop
from .activities import ActivityClients, activity_failure
from .episode import AppFunctions, plan_episode
from .functions import DurableFunctions
from .log_text import loggable
from .orchestration_protocol import history_event
from .orchestration_store import EpisodeCommit, OrchestrationStore, QueuedActivity, StaleEpisodeError
from .outbox import ActivityRequest, EntityRequest, InboxKind, InstanceStart, OrchestrationEvent
from .scheduler import EntityScheduler
from .store import StorageError
from .work_engine import Backoff, IdleSignal, KeyedWorkEngine

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OrchestrationSchedulerOptions:
    """The orchestration scheduler's tuning knobs.

    Attributes:
        max_workers: Most episodes running at the same time.
        activity_workers: Most activities running at the same time.
        timer_poll_seconds: Longest the timer loop sleeps before it reads the clock again (a test clock does not wake
            it; :meth:`OrchestrationScheduler.wake` does).
        storage_backoff_seconds: Delay before the first retry after a storage error; doubles per failure.
        max_backoff_seconds: Longest delay between two retries.
        deterministic: Run every episode and activity on one worker thread, in the order they were scheduled, so the
            same run writes the same history (golden tests, benchmarks). Entities keep their own workers.
    """

    max_workers: int = 4
    activity_workers: int = 8
    timer_poll_seconds: float = 0.5
    storage_backoff_seconds: float = 0.1
    max_backoff_seconds: float = 5.0
    deterministic: bool = False

    def __post_init__(self) -> None:
        """Refuse counts and delays that are not positive."""
        if self.max_workers < 1 or self.activity_workers < 1 or self.timer_poll_seconds <= 0:
            raise ValueError("max_workers, activity_workers and timer_poll_seconds must be positive")


class OrchestrationScheduler:
    """Delivers orchestration inboxes to episodes, runs activities and fires timers.

    Guarantees: one episode at a time per instance (different instances in parallel); every completion reaches the
    orchestrator at most once (the episode discards duplicates); activities run at least once (an activity whose
    outcome was not recorded when the process stopped runs again on the next start, and one still queued after its
    run runs again at once).

    Every read and write goes through ``store`` at the moment it happens, which is the seam for fault injection: a
    test replaces ``store`` with a wrapper that drops an episode's commit or an activity's outcome, as a crash at
    that point would; see ``tests/faults.py``.
    """

    def __init__(
        self,
        store: OrchestrationStore,
        functions: DurableFunctions,
        entities: EntityScheduler,
        options: OrchestrationSchedulerOptions | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """Create the scheduler; nothing runs until :meth:`start`.

        Args:
            store: The orchestration tables.
            functions: The app's orchestrators and activities.
            entities: The entity scheduler: woken for operations orchestrations send, and telling this scheduler
                about the responses entities send back.
            options: Workers, timer polling, backoff and determinism; the defaults when None.
            clock: Where episode times (``current_utc_datetime``) and timer due times come from.
        """
        self.store = store
        self._options = options or OrchestrationSchedulerOptions()
        self._functions = functions
        self._entities = entities
        entities.on_orchestration_message = self.schedule
        self._clock = clock
        backoff = Backoff(self._options.storage_backoff_seconds, self._options.max_backoff_seconds)
        idle = IdleSignal()  # one for both engines, so a waiter re-checks episodes, activities and timers together
        self._idle = idle
        self._episodes: KeyedWorkEngine[str] = KeyedWorkEngine(
            lambda instance_id: lambda: self._episode(instance_id),
            name="an OrchestrationScheduler",
            label=lambda instance_id: f"orchestration {loggable(instance_id)}",
            storage_backoff=backoff,
            idle=idle,
        )
        self._activities: KeyedWorkEngine[QueuedActivity] = KeyedWorkEngine(
            lambda activity: lambda: self._run_activity(activity),
            name="an OrchestrationScheduler",
            label=lambda activity: f"activity {loggable(activity.request.name)}",
            storage_backoff=backoff,
            idle=idle,
        )
        self._lock = threading.Lock()  # guards the timer heap
        self._timers: list[tuple[int, str]] = []
        self._timer_wake = threading.Event()
        self._timer_thread: threading.Thread | None = None
        self._loop = AgentEventLoop()
        self._clients: ActivityClients | None = None
        self._names = AppFunctions(
            orchestrators={key: function.name for key, function in functions.orchestrators.items()},
            activities={key: function.name for key, function in functions.activities.items()},
            entities=entities.entity_names,
        )

    def bind_clients(self, clients: ActivityClients) -> None:
        """Give activities with a durable client binding their binding and the loop to run on (once it is bound)."""
        self._clients = clients

    def app_functions(self) -> AppFunctions:
        """The names the app defines, as an episode checks calls against them."""
        return self._names

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and the timer loop, and pick up whatever a previous run left: inboxes, timers, activities.

        Raises:
            RuntimeError: If the scheduler was started before.
        """
        options = self._options
        if options.deterministic:
            episodes = activities = ThreadPoolExecutor(1, thread_name_prefix="orchestration-worker")
        else:
            episodes = ThreadPoolExecutor(options.max_workers, thread_name_prefix="orchestration-worker")
            activities = ThreadPoolExecutor(options.activity_workers, thread_name_prefix="activity-worker")
        self._episodes.start(episodes)
        self._activities.start(activities)
        now = self._clock.now_ms()
        for due_ms, instance_id in self.store.future_timers(now):
            self._add_timer(due_ms, instance_id)
        for instance_id in self.store.instances_with_inbox(now):
            self.schedule(instance_id)
        self._submit_activities()
        self._timer_thread = threading.Thread(target=self._timer_loop, name="orchestration-timers", daemon=True)
        self._timer_thread.start()

    def stop(self) -> None:
        """Stop taking work, and wait for running episodes and activities to finish and commit.

        Blocks; call it from a thread when on an event loop. Whatever is still queued stays in the store.
        """
        self._episodes.stop()
        self._activities.stop()
        self._timer_wake.set()
        if self._timer_thread is not None:
            self._timer_thread.join(10)
        self._episodes.join()
        self._activities.join()

    def schedule(self, instance_id: str) -> None:
        """Make sure an instance's inbox gets looked at. Cheap and thread-safe.

        Args:
            instance_id: The instance.
        """
        self._episodes.schedule(instance_id)

    def wake(self) -> None:
        """Make the timer loop read the clock now (after a test clock was moved)."""
        self._timer_wake.set()

    def is_idle(self) -> bool:
        """Tell whether no episode or activity is running or queued, and no timer is due (later ones do not count).

        Returns:
            True when idle.
        """
        now = self._clock.now_ms()
        with self._lock:  # the timer loop pops and schedules under this lock: a due timer is in the heap or running
            if self._episodes.is_busy() or self._activities.is_busy() or (self._timers and self._timers[0][0] <= now):
                return False
        return not self.store.queued_activities()

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until :meth:`is_idle` holds, woken each time an episode or activity finishes.

        Args:
            timeout: Seconds to wait at most.

        Raises:
            TimeoutError: If still busy after ``timeout`` seconds.
        """
        await self._idle.wait_until(self.is_idle, timeout, "orchestration scheduler")

    # -- episodes -----------------------------------------------------------------------------------------------

    def _episode(self, instance_id: str) -> bool:
        """Plan and commit one episode.

        Args:
            instance_id: The instance.

        Returns:
            True when something was committed (another episode may be due), False when there was nothing to do.

        Raises:
            StorageError: The store failed before the outcome existed (nothing ran that matters; retry).
        """
        now = self._clock.now_ms()
        episode = self.store.load_episode(instance_id, now)
        if episode is None:
            return self.store.discard_inbox(instance_id) > 0
        orchestrator = self._functions.orchestrators.get(episode.instance.name.lower())
        commit = plan_episode(
            episode,
            now_ms=now,
            orchestrator=orchestrator.handle if orchestrator is not None else None,
            functions=self.app_functions(),
        )
        if commit is None:
            return False
        if not self._commit(commit):
            return False
        if commit.status in ("Completed", "Failed", "Terminated") and episode.instance.status != commit.status:
            logger.info("orchestration %s %s", loggable(instance_id), commit.status.lower())
        self._announce(commit)
        return True

    def _commit(self, commit: EpisodeCommit) -> bool:
        """Store an episode, retrying only the commit for as long as the store fails.

        Args:
            commit: The episode's outcome.

        Returns:
            True once stored; False when the instance was replaced meanwhile or the scheduler stopped first (the
            inbox is delivered again on the next start).
        """

        def write() -> bool:
            try:
                self.store.commit_episode(commit)
            except StaleEpisodeError:
                logger.info("orchestration %s was replaced while an episode ran", loggable(commit.instance_id))
                return False
            return True

        return self._episodes.keep_committing(commit.instance_id, write)

    def _announce(self, commit: EpisodeCommit) -> None:
        """Wake whoever an episode's messages are for: entities, activities, other instances, the timer loop."""
        now = self._clock.now_ms()
        activities = False
        for message in commit.messages:
            if isinstance(message, EntityRequest):
                self._entities.schedule(message.name, message.key)
            elif isinstance(message, ActivityRequest):
                activities = True
            elif isinstance(message, InstanceStart):
                self.schedule(message.instance_id)
            elif isinstance(message, OrchestrationEvent):
                if message.visible_ms > now:
                    self._add_timer(message.visible_ms, message.instance_id)
                else:
                    self.schedule(message.instance_id)
        if activities:
            self._submit_activities()

    # -- activities ---------------------------------------------------------------------------------------------

    def _submit_activities(self) -> None:
        """Hand every queued activity to the activity workers (one already running takes one more look, and ends)."""
        try:
            queued = self.store.queued_activities()
        except StorageError as exc:
            logger.error("could not read the activity queue; it is read again after the next episode: %s", exc)
            return
        for activity in queued:
            self._activities.schedule(activity)

    def _run_activity(self, activity: QueuedActivity) -> bool:
        """Step of an activity's drain: run it and record its outcome with its completion event, if still queued.

        The queue is read first, so a worker handed an activity whose outcome another worker just recorded (the
        queue was read before that commit) does not run it a second time.

        Returns:
            True when it ran (the next step finds it gone, or still queued when its outcome was lost); False when it
            was no longer queued.
        """
        if not self.store.activity_queued(activity.seq):
            return False
        request = activity.request
        completion = OrchestrationEvent(
            request.instance_id,
            request.execution_id,
            InboxKind.COMPLETION,
            self._activity_outcome(request),
            self._clock.now_ms(),
            self._clock.now_ms(),
        )
        if self._activities.keep_committing(activity, lambda: self.store.complete_activity(activity.seq, completion)):
            self.schedule(request.instance_id)
        return True

    def _activity_outcome(self, request: ActivityRequest) -> dict[str, Any]:
        """Run an activity and give its TaskCompleted or TaskFailed event."""
        function = self._functions.activities.get(request.name.lower())
        if function is None:  # the app changed since it was scheduled
            return history_event(
                HistoryEventType.TASK_FAILED,
                self._clock.now_ms(),
                TaskScheduledId=request.task_id,
                Reason=f"The function '{request.name}' doesn't exist, is disabled, or is not an activity function.",
                Details="",
            )
        outcome = self._functions.run_activity(function, request.input, self._loop, self._clients)
        if outcome.error is not None:
            reason, details = activity_failure(outcome.error, function.name)
            logger.warning("activity %s failed: %s", loggable(function.name), loggable(reason))
            return history_event(
                HistoryEventType.TASK_FAILED,
                self._clock.now_ms(),
                TaskScheduledId=request.task_id,
                Reason=reason,
                Details=details,
            )
        return history_event(
            HistoryEventType.TASK_COMPLETED,
            self._clock.now_ms(),
            TaskScheduledId=request.task_id,
            Result=outcome.result_text,
        )

    # -- timers -------------------------------------------------------------------------------------------------

    def _add_timer(self, due_ms: int, instance_id: str) -> None:
        """Remember when an instance has a timer due, and let the timer loop recompute its sleep."""
        with self._lock:
            heapq.heappush(self._timers, (due_ms, instance_id))
        self._timer_wake.set()

    def _timer_loop(self) -> None:
        """Schedule instances whose timers are due; sleep until the next one (at most ``timer_poll_seconds``)."""
        while not self._episodes.stopping:
            self._timer_wake.clear()  # before reading the heap, so a timer added meanwhile wakes the wait below
            now = self._clock.now_ms()
            with self._lock:  # popped and scheduled under one lock, so is_idle never sees a due timer in neither place
                while self._timers and self._timers[0][0] <= now:
                    self._episodes.schedule(heapq.heappop(self._timers)[1])
                next_due = self._timers[0][0] if self._timers else None
            poll = self._options.timer_poll_seconds
            wait = poll if next_due is None else min(poll, max(0.0, (next_due - now) / 1000))
            self._timer_wake.wait(wait)
