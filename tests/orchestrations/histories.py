"""Orchestration histories in the host's JSON format, run through the SDK's real orchestrator handle.

`HistoryDriver` plays the Functions host for one orchestration whose only side effects are entity calls: it
builds each episode's history (reference/orchestration-protocol.md, section 1), reads back the actions, records
each new entity call as the host does (EventSent keyed by the request id), runs the app's real entity function on
the host's batch JSON, and answers with EventRaised. Timers, activities and events are the local host's job.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from azure.durable_functions import DFApp
from batches import entity_batch

ORCHESTRATOR_STARTED = 12
EXECUTION_STARTED = 0
ORCHESTRATOR_COMPLETED = 13
EVENT_SENT = 14
EVENT_RAISED = 15
CALL_ENTITY = 7
SIGNAL_ENTITY = 9
WHEN_ANY = 11
WHEN_ALL = 12
OUT_OF_PROC_LABEL = "$OutOfProcData$:"


def functions_of(app: DFApp) -> dict[str, Callable[[str], str]]:
    """The functions the worker would call, by name (`get_functions` may be called once per app)."""
    return {function.get_function_name(): function.get_user_function() for function in app.get_functions()}


def flat_actions(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The orchestrator's actions in order, compound ones (`task_all`, `task_any`) replaced by their children."""
    found: list[dict[str, Any]] = []

    def walk(actions: Iterable[dict[str, Any]]) -> None:
        for action in actions:
            if action["actionType"] in (WHEN_ALL, WHEN_ANY):
                walk(action["compoundActions"])
            else:
                found.append(action)

    for group in state["actions"]:
        walk(group)
    return found


@dataclass
class EntityCall:
    """One entity call the orchestration made: its request id, target and decoded input."""

    request_id: str
    entity_name: str
    key: str
    operation: str
    input: dict[str, Any]
    input_text: str


@dataclass
class HistoryDriver:
    """Plays the host for one orchestration whose side effects are entity calls.

    Args:
        functions: The app's functions (`functions_of(app)`); its entity functions answer the calls.
        orchestrator: The orchestrator function's name.
        instance_id: The orchestration instance id.
        orchestration_input: The orchestration's input (any JSON value).
        start: The time of the first episode; each later episode is one second later.
    """

    functions: dict[str, Callable[[str], str]]
    orchestrator: str
    instance_id: str = "orchestration-1"
    orchestration_input: Any = None
    start: datetime.datetime = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)
    history: list[dict[str, Any]] = field(default_factory=list)
    calls: list[EntityCall] = field(default_factory=list)
    entity_states: dict[tuple[str, str], str | None] = field(default_factory=dict)
    episodes: int = 0

    def event(self, event_type: int, **fields: Any) -> dict[str, Any]:
        """A history event stamped with the current episode's time."""
        moment = self.start + datetime.timedelta(seconds=self.episodes)
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {"EventType": event_type, "EventId": -1, "IsPlayed": False, "Timestamp": stamp, **fields}

    def episode(self, new_events: list[dict[str, Any]]) -> dict[str, Any]:
        """Run one episode with these new events; record its new entity calls; return the orchestrator's state."""
        for old in self.history:
            old["IsPlayed"] = True
        self.history.append(self.event(ORCHESTRATOR_STARTED))
        self.history.extend(new_events)
        state = self.replay()
        already = sum(1 for event in self.history if event["EventType"] == EVENT_SENT)
        for position, action in enumerate(flat_actions(state)):
            if position < already:
                continue
            assert action["actionType"] in (CALL_ENTITY, SIGNAL_ENTITY), f"only entity calls are played: {action}"
            self._send(position, action)
        self.history.append(self.event(ORCHESTRATOR_COMPLETED))
        self.episodes += 1
        return state

    def replay(self) -> dict[str, Any]:
        """The orchestrator's state for the history as it stands (nothing is recorded)."""
        context = {
            "history": self.history,
            "input": None if self.orchestration_input is None else json.dumps(self.orchestration_input),
            "instanceId": self.instance_id,
            "isReplaying": False,
            "parentInstanceId": None,
            "upperSchemaVersion": 1,
            "upperSchemaVersionNew": 2,
        }
        try:
            return json.loads(self.functions[self.orchestrator](json.dumps(context)))
        except Exception as exc:
            message = str(exc)
            if OUT_OF_PROC_LABEL not in message:
                raise
            return json.loads(message.split(OUT_OF_PROC_LABEL, 1)[1])

    def _send(self, position: int, action: dict[str, Any]) -> None:
        _, name, key = action["instanceId"].split("@", 2)
        request_id = f"request-{position}"
        body = {"op": action["operation"], "id": request_id, "input": action["input"], "parent": self.instance_id}
        self.history.append(
            self.event(EVENT_SENT, EventId=position, InstanceId=action["instanceId"], Name="op", Input=json.dumps(body))
        )
        if action["actionType"] == CALL_ENTITY:
            self.calls.append(
                EntityCall(request_id, name, key, action["operation"], json.loads(action["input"]), action["input"])
            )

    def answer(self, call: EntityCall) -> dict[str, Any]:
        """Run the call's operation on the app's real entity function; return the EventRaised the host sends back."""
        function = self.functions[call.entity_name]
        batch = entity_batch(
            call.entity_name,
            call.key,
            self.entity_states.get((call.entity_name, call.key)),
            [(call.operation, call.input)],
        )
        output = json.loads(function(batch))
        self.entity_states[(call.entity_name, call.key)] = output["entityState"] if output["entityExists"] else None
        (result,) = output["results"]
        response: dict[str, Any] = {"result": result["result"]}
        if result["isError"]:
            response["exceptionType"] = "Error"
        return self.event(EVENT_RAISED, Name=call.request_id, Input=json.dumps(response))

    def run(
        self, *, max_episodes: int = 50, order: Callable[[list[EntityCall]], list[EntityCall]] = list
    ) -> dict[str, Any]:
        """Start the orchestration and answer its calls, episode by episode, until it completes or fails.

        Args:
            max_episodes: A bound, so a numbering mistake fails the test instead of hanging it.
            order: The order the pending calls' answers arrive in (as given, by default).
        """
        started = self.event(
            EXECUTION_STARTED, Name=self.orchestrator, Version="", Input=json.dumps(self.orchestration_input)
        )
        state = self.episode([started])
        answered = 0
        while not state.get("isDone") and "error" not in state:
            assert self.episodes < max_episodes, "the orchestration did not finish"
            pending = self.calls[answered:]
            assert pending, f"the orchestration waits for nothing this driver plays: {state}"
            answered = len(self.calls)
            state = self.episode([self.answer(call) for call in order(pending)])
        return state

    def entity_state(self, entity_name: str, key: str) -> dict[str, Any]:
        """The committed state of one conversation entity, decoded."""
        text = self.entity_states[(entity_name, key)]
        assert text is not None
        return json.loads(text)
