"""A local host for orchestration tests: the real `LocalHost` in its own loop, a real durable client, and helpers to
let it settle, move its clock and record what the orchestrators returned."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import azure.durable_functions as df
from clocks import ManualClock
from hosting import RunningHost

from agent_host._local_host import LocalHost
from agent_host._local_host.orchestration_store import InstanceRow


@dataclass
class StateRecorder:
    """Wraps the app's orchestrator handles and keeps the last state each instance's orchestrator returned."""

    states: dict[str, str] = field(default_factory=dict)

    def wrap(self, handle: Callable[[str], str]) -> Callable[[str], str]:
        def recording(context: str) -> str:
            instance_id = json.loads(context)["instanceId"]
            try:
                state = handle(context)
            except Exception as exc:
                self.states[instance_id] = str(exc)
                raise
            self.states[instance_id] = state
            return state

        return recording


class OrchestrationHost(RunningHost):
    """`RunningHost` with orchestrations deterministic by default (one worker, scheduling order) and a test clock."""

    def __init__(
        self,
        app_factory: Callable[[], Any],
        state_dir: Path,
        clock: ManualClock,
        *,
        function_key: str | None = None,
        deterministic: bool = True,
        overridable_existing_instance_states: str = "NonRunningStates",
    ) -> None:
        self.clock = clock
        self.deterministic = deterministic
        self.overridable_existing_instance_states = overridable_existing_instance_states
        self.recorder = StateRecorder()
        super().__init__(app_factory, state_dir, function_key)

    def host_options(self) -> dict[str, Any]:
        return {
            **super().host_options(),
            "deterministic_orchestrations": self.deterministic,
            "overridable_existing_instance_states": self.overridable_existing_instance_states,
        }

    def before_start(self, host: LocalHost) -> None:
        orchestrators = host.durable_functions.orchestrators
        for key, function in orchestrators.items():
            orchestrators[key] = replace(function, handle=self.recorder.wrap(function.handle))

    @property
    def local(self) -> LocalHost:
        assert self.host is not None
        return self.host

    def client(self) -> df.DurableOrchestrationClient:
        """A real durable client bound as the app's functions are (private rpcBaseUrl, public management URLs)."""
        return df.DurableOrchestrationClient(self.local.durable_client_binding())

    def settle(self, timeout: float = 30) -> None:
        """Wait until no episode, activity or entity batch is running or due (timers later than now do not count)."""
        deadline = time.monotonic() + timeout
        while True:
            self.call(self.local.orchestrations.wait_idle(timeout), timeout + 5)
            self.call(self.local.scheduler.wait_idle(timeout), timeout + 5)
            if self.local.orchestrations.is_idle() and self.local.scheduler.is_idle():
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the local host did not settle")

    def advance(self, seconds: float) -> None:
        """Move the clock, let the timer loop see it, and settle."""
        self.clock.advance(seconds)
        self.local.orchestrations.wake()
        self.settle()

    def start_new(self, name: str, instance_id: str | None = None, value: Any = None) -> str:
        """Start an instance through the real client and let it settle."""
        started = self.call(self.client().start_new(name, instance_id, value))
        self.settle()
        return started

    def raise_event(self, instance_id: str, name: str, data: Any) -> None:
        self.call(self.client().raise_event(instance_id, name, data))
        self.settle()

    def instance(self, instance_id: str) -> InstanceRow:
        record = self.local.orchestrations.store.instance(instance_id)
        assert record is not None, instance_id
        return record

    def history(self, instance_id: str) -> list[dict[str, Any]]:
        return self.local.orchestrations.store.history(instance_id)

    def output(self, instance_id: str) -> Any:
        record = self.instance(instance_id)
        return None if record.output is None else json.loads(record.output)
