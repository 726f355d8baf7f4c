"""Runs orchestrations on the local host: episodes one at a time per instance, activities in parallel, timers when due.

Episodes and activities run on worker threads, never on the event loop. Every step commits in one transaction with
the messages it sends (see ``outbox``), and is announced only after it committed; a crash at any point loses at most
the uncommitted step, which runs again from the same stored inbox when the host starts. Storage errors are retried
with backoff and never fail an orchestration. Time comes from the app's clock, so a test clock drives timers
(:meth:`OrchestrationScheduler.wake` makes the timer loop look at the clock at once).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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

logger = logging.getLogger(__name__)

CrashBeforeEpisodeCommitHook = Callable[[str, EpisodeCommit], bool]
"""Fault injection: ``(instance_id, commit) -> True`` throws an episode's outcome away instead of committing it."""

CrashAfterActivityHook = Callable[[QueuedActivity], bool]
"""Fault injection: ``(activity) -> True`` throws away the outcome of an activity that ran, instead of recording it."""

_MAX_BACKOFF_SECONDS = 5.0


class OrchestrationScheduler:
    """Delivers orchestration inboxes to episodes, runs activities and fires timers.

    Guarantees: one episode at a time per instance (different instances in parallel); every completion reaches the
    orchestrator at most once (the episode discards duplicates); activities run at least once (an activity whose
    outcome was not recorded when the process stopped runs again on the next start).

    Fault-injection seams (None, i.e. off, by default; for tests), each as if the process died at that point:

    * ``crash_before_commit``: called with ``(instance_id, commit)`` when an episode is ready to commit; True throws
      the outcome away, and the same inbox is delivered again.
    * ``crash_after_activity``: called with the activity after it ran; True throws its outcome away, and it runs
      again.

    Make either return True a bounded number of times, or the instance never progresses.
    """

    def __init__(
        self,
        store: OrchestrationStore,
        functions: DurableFunctions,
        entities: EntityScheduler,
        *,
        clock: Clock = SYSTEM_CLOCK,
        max_workers: int = 4,
        activity_workers: int = 8,
        timer_poll_seconds: float = 0.5,
        storage_backoff_seconds: float = 0.1,
        max_backoff_seconds: float = _MAX_BACKOFF_SECONDS,
        deterministic: bool = False,
    ) -> None:
        """Create the scheduler; nothing runs until :meth:`start`.

        Args:
            store: The orchestration tables.
            functions: The app's orchestrators and activities.
            entities: The entity scheduler: woken for operations orchestrations send, and telling this scheduler
                about the responses entities send back.
            clock: Where episode times (``current_utc_datetime``) and timer due times come from.
            max_workers: Most episodes running at the same time.
            activity_workers: Most activities running at the same time.
            timer_poll_seconds: Longest the timer loop sleeps before it reads the clock again (a test clock does not
                wake it; :meth:`wake` does).
            storage_backoff_seconds: Delay before the first retry after a storage error; doubles per failure.
            max_backoff_seconds: Longest delay between two retries.
            deterministic: Run every episode and activity on one worker thread, in the order they were scheduled,
                so the same run writes the same history (golden tests, benchmarks). Entities keep their own workers.

        Raises:
            ValueError: If a count or delay is not positive.
        """
        if max_workers < 1 or activity_workers < 1 or timer_poll_seconds <= 0:
            raise ValueError("max_workers, activity_workers and timer_poll_seconds must be positive")
        self.store = store
        self.crash_before_commit: CrashBeforeEpisodeCommitHook | None = None
        self.crash_after_activity: CrashAfterActivityHook | None = None
        self._functions = functions
        self._entities = entities
        entities.on_orchestration_message = self.schedule
        self._clock = clock
        self._max_workers = max_workers
        self._activity_workers = activity_workers
        self._poll = timer_poll_seconds
        self._deterministic = deterministic
        self._storage_backoff = storage_backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._lock = threading.Lock()
        self._active: set[str] = set()
        self._dirty: set[str] = set()
        self._running_activities: set[int] = set()
        self._timers: list[tuple[int, str]] = []
        self._timer_wake = threading.Event()
        self._stopping = threading.Event()
        self._episodes: ThreadPoolExecutor | None = None
        self._activities: ThreadPoolExecutor | None = None
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
        with self._lock:
            if self._episodes is not None or self._stopping.is_set():
                raise RuntimeError("an OrchestrationScheduler can be started only once")
            if self._deterministic:
                self._episodes = self._activities = ThreadPoolExecutor(1, thread_name_prefix="orchestration-worker")
            else:
                self._episodes = ThreadPoolExecutor(self._max_workers, thread_name_prefix="orchestration-worker")
                self._activities = ThreadPoolExecutor(self._activity_workers, thread_name_prefix="activity-worker")
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
        self._stopping.set()
        self._timer_wake.set()
        if self._timer_thread is not None:
            self._timer_thread.join(10)
        with self._lock:
            pools = {id(pool): pool for pool in (self._episodes, self._activities) if pool is not None}
        for pool in pools.values():
            pool.shutdown(wait=True)

    def schedule(self, instance_id: str) -> None:
        """Make sure an instance's inbox gets looked at. Cheap and thread-safe.

        Args:
            instance_id: The instance.
        """
        with self._lock:
            self._schedule_locked(instance_id)

    def _schedule_locked(self, instance_id: str) -> None:
        """:meth:`schedule`, with the lock held."""
        if self._episodes is None or self._stopping.is_set():
            return
        if instance_id in self._active:
            self._dirty.add(instance_id)
            return
        self._active.add(instance_id)
        self._episodes.submit(self._drain, instance_id)

    def wake(self) -> None:
        """Make the timer loop read the clock now (after a test clock was moved)."""
        self._timer_wake.set()

    def is_idle(self) -> bool:
        """Tell whether no episode or activity is running or queued, and no timer is due (later ones do not count).

        Returns:
            True when idle.
        """
        now = self._clock.now_ms()
        with self._lock:
            if self._active or self._running_activities or (self._timers and self._timers[0][0] <= now):
                return False
        return not self.store.queued_activities()

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until :meth:`is_idle` holds.

        Args:
            timeout: Seconds to wait at most.

        Raises:
            TimeoutError: If still busy after ``timeout`` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.is_idle():
            if loop.time() >= deadline:
                raise TimeoutError(f"orchestration scheduler still busy after {timeout} s")
            await asyncio.sleep(0.01)

    # -- episodes -----------------------------------------------------------------------------------------------

    def _drain(self, instance_id: str) -> None:
        """Worker body: run episodes of one instance until nothing in its inbox can be delivered."""
        storage_failures = 0
        released = False
        try:
            while not self._stopping.is_set():
                with self._lock:
                    self._dirty.discard(instance_id)
                try:
                    progressed = self._episode(instance_id)
                except StorageError as exc:
                    storage_failures += 1
                    logger.log(
                        logging.ERROR if storage_failures == 1 else logging.WARNING,
                        "storage failure %d for orchestration %s; retrying: %s",
                        storage_failures,
                        loggable(instance_id),
                        exc,
                    )
                    self._stopping.wait(self._backoff(storage_failures))
                    continue
                storage_failures = 0
                if progressed:
                    continue
                with self._lock:
                    if instance_id in self._dirty:
                        continue
                    self._active.discard(instance_id)
                    released = True
                    return
        except BaseException:
            logger.exception("orchestration worker for %s stopped unexpectedly", loggable(instance_id))
        finally:
            # Once released, the instance may already belong to a newer worker: releasing it again would let a third
            # worker run episodes of it alongside that one (and deliver a completion twice).
            if not released:
                with self._lock:
                    self._active.discard(instance_id)
                    self._dirty.discard(instance_id)

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
        if self.crash_before_commit is not None and self.crash_before_commit(instance_id, commit):
            logger.warning("fault injection: discarding the uncommitted episode of %s", loggable(instance_id))
            return True
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
        attempts = 0
        while True:
            try:
                self.store.commit_episode(commit)
                return True
            except StaleEpisodeError:
                logger.info("orchestration %s was replaced while an episode ran", loggable(commit.instance_id))
                return False
            except StorageError as exc:
                attempts += 1
                logger.log(
                    logging.ERROR if attempts == 1 else logging.WARNING,
                    "could not store an episode of %s (attempt %d); keeping it and retrying: %s",
                    loggable(commit.instance_id),
                    attempts,
                    exc,
                )
                if self._stopping.is_set():
                    return False
                self._stopping.wait(self._backoff(attempts))

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
        """Hand every queued activity not already running to the activity workers."""
        # The queue is read under the lock that guards the running set: a worker deletes its row (committing the
        # outcome) before it leaves the set, so a row read here either is gone or still belongs to a running worker.
        # Read outside the lock, a row could be read just before its outcome commits and its activity run twice.
        with self._lock:
            if self._activities is None or self._stopping.is_set():
                return
            try:
                queued = self.store.queued_activities()
            except StorageError as exc:
                logger.error("could not read the activity queue; it is read again after the next episode: %s", exc)
                return
            for activity in queued:
                if activity.seq not in self._running_activities:
                    self._running_activities.add(activity.seq)
                    self._activities.submit(self._run_activity, activity)

    def _run_activity(self, activity: QueuedActivity) -> None:
        """Worker body: run one activity and record its outcome with its completion event."""
        request = activity.request
        rerun = False
        try:
            function = self._functions.activities.get(request.name.lower())
            if function is None:  # the app changed since it was scheduled
                outcome_event = history_event(
                    HistoryEventType.TASK_FAILED,
                    self._clock.now_ms(),
                    TaskScheduledId=request.task_id,
                    Reason=f"The function '{request.name}' doesn't exist, is disabled, or is not an activity function.",
                    Details="",
                )
            else:
                outcome = self._functions.run_activity(function, request.input, self._loop, self._clients)
                if outcome.error is not None:
                    reason, details = activity_failure(outcome.error, function.name)
                    logger.warning("activity %s failed: %s", loggable(function.name), loggable(reason))
                    outcome_event = history_event(
                        HistoryEventType.TASK_FAILED,
                        self._clock.now_ms(),
                        TaskScheduledId=request.task_id,
                        Reason=reason,
                        Details=details,
                    )
                else:
                    outcome_event = history_event(
                        HistoryEventType.TASK_COMPLETED,
                        self._clock.now_ms(),
                        TaskScheduledId=request.task_id,
                        Result=outcome.result_text,
                    )
            if self.crash_after_activity is not None and self.crash_after_activity(activity):
                logger.warning("fault injection: discarding the outcome of activity %s", loggable(request.name))
                rerun = True
                return
            completion = OrchestrationEvent(
                request.instance_id,
                request.execution_id,
                InboxKind.COMPLETION,
                outcome_event,
                self._clock.now_ms(),
                self._clock.now_ms(),
            )
            if self._record_activity(activity, completion):
                self.schedule(request.instance_id)
        except BaseException:
            logger.exception("activity worker for %s stopped unexpectedly", loggable(request.name))
        finally:
            with self._lock:
                self._running_activities.discard(activity.seq)
            if rerun:  # as after a restart: the activity is still queued, so it runs again
                self._submit_activities()

    def _record_activity(self, activity: QueuedActivity, completion: OrchestrationEvent) -> bool:
        """Store an activity's outcome, retrying the commit while the store fails (the activity does not run again).

        Args:
            activity: The activity.
            completion: Its completion event.

        Returns:
            True once stored; False if its execution ended meanwhile or the scheduler stopped first.
        """
        attempts = 0
        while True:
            try:
                return self.store.complete_activity(activity.seq, completion)
            except StorageError as exc:
                attempts += 1
                logger.log(
                    logging.ERROR if attempts == 1 else logging.WARNING,
                    "could not record the outcome of activity %s (attempt %d); retrying: %s",
                    loggable(activity.request.name),
                    attempts,
                    exc,
                )
                if self._stopping.is_set():
                    return False
                self._stopping.wait(self._backoff(attempts))

    # -- timers -------------------------------------------------------------------------------------------------

    def _add_timer(self, due_ms: int, instance_id: str) -> None:
        """Remember when an instance has a timer due, and let the timer loop recompute its sleep."""
        with self._lock:
            heapq.heappush(self._timers, (due_ms, instance_id))
        self._timer_wake.set()

    def _timer_loop(self) -> None:
        """Schedule instances whose timers are due; sleep until the next one (at most ``timer_poll_seconds``)."""
        while not self._stopping.is_set():
            self._timer_wake.clear()  # before reading the heap, so a timer added meanwhile wakes the wait below
            now = self._clock.now_ms()
            with self._lock:  # popped and scheduled under one lock, so is_idle never sees a due timer in neither place
                while self._timers and self._timers[0][0] <= now:
                    self._schedule_locked(heapq.heappop(self._timers)[1])
                next_due = self._timers[0][0] if self._timers else None
            wait = self._poll if next_due is None else min(self._poll, max(0.0, (next_due - now) / 1000))
            self._timer_wake.wait(wait)

    def _backoff(self, failures: int) -> float:
        """The delay before the next retry after ``failures`` storage failures."""
        return min(self._storage_backoff * 2 ** min(failures - 1, 30), self._max_backoff)
