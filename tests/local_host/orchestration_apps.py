"""One app with an orchestrator per Durable Functions pattern, plain azure-functions-durable code on AgentFunctionApp.

Nothing here knows about the local host: these are the functions a user writes. Activities append a line per run to
the file named by `CALL_LOG_VARIABLE` (when set), so tests in another process can count runs across a crash.
"""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from agent_host import AgentFunctionApp, HostSettings
from agent_host._clock import SYSTEM_CLOCK, Clock

CALL_LOG_VARIABLE = "ORCHESTRATION_TEST_CALL_LOG"
ACTIVITY_DELAY_VARIABLE = "ORCHESTRATION_TEST_ACTIVITY_DELAY"
TIMER_SECONDS_VARIABLE = "ORCHESTRATION_TEST_TIMER_SECONDS"

COUNTER = df.EntityId("counter", "shared")
APPROVAL_TIMEOUT = timedelta(seconds=60)

# What the orchestrators saw, by instance: (is_replaying, what) pairs; in-process tests read it.
REPLAY_LOG: dict[str, list[tuple[bool, str]]] = {}
# Which activity `changing_code` calls: a test changes it while an instance runs (a code change mid-flight).
CODE = {"activity": "greet"}
# Failures so far per key of the `flaky` activity.
FLAKY_FAILURES: dict[str, int] = {}


def log_call(name: str, value: Any) -> None:
    """Append one activity run to the call log, if there is one."""
    path = os.environ.get(CALL_LOG_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{name} {json.dumps(value)}\n")


def build_orchestration_app(clock: Clock = SYSTEM_CLOCK) -> AgentFunctionApp:
    """The test app: orchestrators, activities, two entities and HTTP starters.

    Args:
        clock: The app's clock (a `ManualClock` drives timers in-process).

    Returns:
        The app.
    """
    app = AgentFunctionApp(settings=HostSettings(), clock=clock)

    # -- activities -------------------------------------------------------------------------------------------

    @app.activity_trigger(input_name="city")
    def greet(city: str) -> str:
        log_call("greet", city)
        return f"Hello {city}!"

    @app.activity_trigger(input_name="number")
    def square(number: int) -> int:
        log_call("square", number)
        return number * number

    @app.activity_trigger(input_name="number")
    async def classify(number: int) -> str:
        log_call("classify", number)
        return "even" if number % 2 == 0 else "odd"

    @app.activity_trigger(input_name="request")
    def flaky(request: dict) -> str:
        key, failures = request["key"], request["failures"]
        log_call("flaky", key)
        FLAKY_FAILURES[key] = FLAKY_FAILURES.get(key, 0) + 1
        if FLAKY_FAILURES[key] <= failures:
            raise ConnectionError(f"attempt {FLAKY_FAILURES[key]} of {key} failed")
        return f"{key} succeeded on attempt {FLAKY_FAILURES[key]}"

    @app.activity_trigger(input_name="what")
    def explode(what: str) -> str:
        log_call("explode", what)
        raise ValueError(f"cannot process {what}")

    @app.activity_trigger(input_name="label")
    def slow(label: str) -> str:
        log_call("slow-start", label)
        time.sleep(float(os.environ.get(ACTIVITY_DELAY_VARIABLE, "0")))
        log_call("slow-end", label)
        return f"{label} done"

    # -- entities ---------------------------------------------------------------------------------------------

    @app.entity_trigger(context_name="context")
    def counter(context: df.DurableEntityContext) -> None:
        value = context.get_state(lambda: 0)
        operation = context.operation_name
        if operation == "add":
            value += context.get_input()
        elif operation == "fail":
            raise RuntimeError("the counter refuses")
        context.set_state(value)
        context.set_result(value)

    # An entity function in the host's raw JSON format: the SDK has no API to signal from an entity, but the
    # extension delivers the `signals` an entity function returns, and so does the local host.
    @app.function_name("relay")
    @app.generic_trigger(arg_name="context", type="entityTrigger", entityName="relay")
    def relay(context: func.EntityContext) -> str:
        request = json.loads(context.body)
        results, signals = [], []
        for operation in request["batch"]:
            if operation["name"] == "explode":  # the entity function itself fails: the host retries, then gives up
                raise RuntimeError("the relay entity function crashed")
            amount = json.loads(operation["input"])
            signals.append(
                {"target": {"name": "counter", "key": "relayed"}, "name": "add", "input": operation["input"]}
            )
            results.append({"isError": False, "result": json.dumps(amount), "duration": 0, "startTime": 0})
        return json.dumps({"entityExists": True, "entityState": "{}", "results": results, "signals": signals})

    # -- orchestrators, one per pattern -----------------------------------------------------------------------

    @app.orchestration_trigger(context_name="context")
    def sequence(context: df.DurableOrchestrationContext):
        greetings = []
        for city in context.get_input():
            greetings.append((yield context.call_activity(greet, city)))
        return greetings

    @app.orchestration_trigger(context_name="context")
    def fan_out(context: df.DurableOrchestrationContext):
        squares = yield context.task_all([context.call_activity("square", n) for n in range(context.get_input())])
        return sum(squares)

    @app.orchestration_trigger(context_name="context")
    def conditional(context: df.DurableOrchestrationContext):
        number = context.get_input()
        kind = yield context.call_activity("classify", number)
        if kind == "even":
            return [kind, (yield context.call_activity("square", number))]
        return [kind, (yield context.call_activity("greet", str(number)))]

    @app.orchestration_trigger(context_name="context")
    def approval(context: df.DurableOrchestrationContext):
        if not context.is_replaying:  # set once; later episodes send no custom status and the host keeps this one
            context.set_custom_status({"stage": "waiting for approval"})
        deadline = context.create_timer(context.current_utc_datetime + APPROVAL_TIMEOUT)
        decision = context.wait_for_external_event("decision")
        winner = yield context.task_any([decision, deadline])
        if winner == decision:
            deadline.cancel()
            return {"decision": decision.result, "timedOut": False}
        return {"decision": None, "timedOut": True}

    @app.orchestration_trigger(context_name="context")
    def entity_calls(context: df.DurableOrchestrationContext):
        first = yield context.call_entity(COUNTER, "add", 5)
        context.signal_entity(COUNTER, "add", 10)
        second = yield context.call_entity(COUNTER, "get")
        try:
            yield context.call_entity(COUNTER, "fail")
        except Exception as exc:
            failure = str(exc)
        return [first, second, failure]

    @app.orchestration_trigger(context_name="context")
    def parent(context: df.DurableOrchestrationContext):
        named = yield context.call_sub_orchestrator("child", 3, instance_id=f"{context.instance_id}-child")
        generated = yield context.call_sub_orchestrator("child", 4)
        return [named, generated]

    @app.orchestration_trigger(context_name="context")
    def child(context: df.DurableOrchestrationContext):
        squared = yield context.call_activity("square", context.get_input())
        return {"parent": context.parent_instance_id, "squared": squared}

    @app.orchestration_trigger(context_name="context")
    def retrying(context: df.DurableOrchestrationContext):
        key = context.get_input()
        recovered = yield context.call_activity_with_retry(
            "flaky", df.RetryOptions(1000, 3), {"key": f"{key}-recovers", "failures": 2}
        )
        try:
            yield context.call_activity_with_retry(
                "flaky", df.RetryOptions(500, 2), {"key": f"{key}-fails", "failures": 9}
            )
        except Exception as exc:
            exhausted = str(exc).split("\n")[0]
        return [recovered, exhausted]

    @app.orchestration_trigger(context_name="context")
    def failure_caught(context: df.DurableOrchestrationContext):
        try:
            yield context.call_activity("explode", "the order")
        except Exception as exc:
            return f"caught: {str(exc).splitlines()[0]}"
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def failure_uncaught(context: df.DurableOrchestrationContext):
        yield context.call_activity("greet", "before the failure")
        yield context.call_activity("explode", "the invoice")
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def counting(context: df.DurableOrchestrationContext):
        number = context.get_input()
        if number < 3:
            yield context.call_activity("square", number)
            context.continue_as_new(number + 1)
            return None
        return f"counted to {number}"

    @app.orchestration_trigger(context_name="context")
    def replay_facts(context: df.DurableOrchestrationContext):
        log = REPLAY_LOG.setdefault(context.instance_id, [])
        first = {"uuid": context.new_uuid(), "time": context.current_utc_datetime.isoformat()}
        log.append((context.is_replaying, "before"))
        yield context.wait_for_external_event("next")
        log.append((context.is_replaying, "after"))
        second = {"uuid": context.new_uuid(), "time": context.current_utc_datetime.isoformat()}
        return [first, second]

    @app.orchestration_trigger(context_name="context")
    def http_caller(context: df.DurableOrchestrationContext):
        response = yield context.call_http("GET", "https://example.com/status")
        return response

    @app.orchestration_trigger(context_name="context")
    def changing_code(context: df.DurableOrchestrationContext):
        first = yield context.call_activity(CODE["activity"], "v1")
        yield context.wait_for_external_event("continue")
        return first

    @app.orchestration_trigger(context_name="context")
    def missing_activity(context: df.DurableOrchestrationContext):
        try:
            yield context.call_activity("no_such_activity", 1)
        except Exception as exc:
            return str(exc).splitlines()[0]
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def two_events(context: df.DurableOrchestrationContext):
        yield context.wait_for_external_event("start")
        first = yield context.wait_for_external_event("item")
        second = yield context.wait_for_external_event("item")
        return [first, second]

    @app.orchestration_trigger(context_name="context")
    def signal_relay(context: df.DurableOrchestrationContext):
        yield context.call_entity(df.EntityId("relay", "r1"), "forward", 7)
        return "relayed"

    @app.orchestration_trigger(context_name="context")
    def retried_child(context: df.DurableOrchestrationContext):
        try:
            yield context.call_sub_orchestrator_with_retry("failure_uncaught", df.RetryOptions(1000, 2))
        except Exception as exc:
            return str(exc).split(" \n ")[0]
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def chatty_status(context: df.DurableOrchestrationContext):
        context.set_custom_status("x" * 9000)  # 18,000 bytes as UTF-16: over the host's 16 KB limit
        yield context.call_activity("greet", "status")
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def unknown_entity(context: df.DurableOrchestrationContext):
        try:
            yield context.call_entity(df.EntityId("nosuch", "k"), "add", 1)
        except Exception as exc:
            return str(exc)
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def dead_letter_call(context: df.DurableOrchestrationContext):
        try:
            yield context.call_entity(df.EntityId("relay", "r2"), "explode", 1)
        except Exception as exc:
            return str(exc)
        return "not reached"

    @app.orchestration_trigger(context_name="context")
    def durable_wait(context: df.DurableOrchestrationContext):
        """For crash tests: a timer, an activity that may be slow, then an external event."""
        seconds = float(os.environ.get(TIMER_SECONDS_VARIABLE, "1"))
        yield context.create_timer(context.current_utc_datetime + timedelta(seconds=seconds))
        work = yield context.call_activity("slow", context.get_input())
        approval = yield context.wait_for_external_event("go")
        return [work, approval]

    # -- HTTP starters ----------------------------------------------------------------------------------------

    @app.function_name("start_orchestration")
    @app.route(route="start/{name}", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def start_orchestration(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        body = req.get_body()
        instance_id = await client.start_new(
            req.route_params["name"], req.params.get("id"), json.loads(body) if body else None
        )
        timeout = req.params.get("waitMs")
        if timeout is not None:
            return await client.wait_for_completion_or_create_check_status_response(
                req, instance_id, timeout_in_milliseconds=int(timeout), retry_interval_in_milliseconds=50
            )
        return client.create_check_status_response(req, instance_id)

    return app
