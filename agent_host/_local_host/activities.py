"""Activity functions as the Functions host runs them: input decoded and result encoded by the worker's converter.

The input is the text the orchestrator's action carried; ``ActivityTriggerConverter`` decodes it (``df_loads``) and
encodes the return value (``df_dumps``), as the Python worker does on Azure. An activity with a durable client
binding gets the binding JSON, as an HTTP function does, and runs on the loop the HTTP functions run on: the SDK's
client keeps one HTTP session per process, bound to the loop that opened it, as the worker's one loop is on Azure.
Knows nothing about queues or episodes.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import azure.functions as func
from azure.functions import meta
from azure.functions.durable_functions import ActivityTriggerConverter

from .._event_loop import AgentEventLoop


@dataclass(frozen=True)
class ActivityOutcome:
    """What one run of an activity produced.

    Attributes:
        result_text: The encoded return value (JSON text), when it succeeded.
        error: What it raised, when it failed.
    """

    result_text: str | None = None
    error: BaseException | None = None


@dataclass(frozen=True)
class ActivityClients:
    """What activities with a durable client binding need from the host: the binding and the loop to run on.

    Attributes:
        binding: The durable client binding JSON for a task hub ("" for the host's default).
        loop: The loop the host's HTTP functions run on.
    """

    binding: Callable[[str], str]
    loop: asyncio.AbstractEventLoop

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run a coroutine on the host's loop from a worker thread, and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


@dataclass
class ActivityFunction:
    """One activity function of the app.

    Attributes:
        name: The function's name (what ``call_activity`` names).
        parameter: The parameter the activity trigger binds the input to.
        user_function: The function as the app registered it (sync or async).
        client_param: The parameter receiving the durable client binding JSON, if the function has one.
        task_hub: The task hub its durable client binding names ("" for the host's default).
    """

    name: str
    parameter: str
    user_function: Callable[..., Any]
    client_param: str | None = None
    task_hub: str = ""
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        """Note whether the function must be awaited."""
        self.is_async = inspect.iscoroutinefunction(self.user_function)

    @classmethod
    def from_function(cls, function: func.Function, trigger: dict[str, Any]) -> ActivityFunction:
        """Describe an indexed activity function.

        Args:
            function: The function from ``app.get_functions()``.
            trigger: Its trigger's dict representation.

        Returns:
            The activity.
        """
        bindings = [binding.get_dict_repr() for binding in function.get_bindings()]
        client = next((info for info in bindings if info.get("type") == "durableClient"), None)
        return cls(
            name=function.get_function_name() or str(trigger.get("activity") or "activity"),
            parameter=str(trigger.get("name") or "input"),
            user_function=function.get_user_function(),
            client_param=None if client is None else str(client["name"]),
            task_hub="" if client is None else str(client.get("taskHub") or ""),
        )

    def run(
        self, input_text: str | None, loop: AgentEventLoop, clients: ActivityClients | None = None
    ) -> ActivityOutcome:
        """Run the activity once: decode the input, call the function, encode what it returned.

        Args:
            input_text: The input text from the orchestrator's action (``df_dumps`` of the value).
            loop: Where a coroutine activity runs (one long-lived loop, as the worker's).
            clients: The durable client binding and the host's loop, for an activity with a client binding.

        Returns:
            The encoded result, or the exception the function (or the encoding of its result) raised.
        """
        try:
            datum = meta.Datum(input_text if input_text is not None else "null", "string")
            value = ActivityTriggerConverter.decode(datum, trigger_metadata=None)
            arguments = {self.parameter: value}
            if self.client_param is not None:
                if clients is None:
                    raise RuntimeError(f"activity {self.name!r} needs a durable client, which the host has not bound")
                arguments[self.client_param] = clients.binding(self.task_hub)
            result = self.user_function(**arguments)
            if inspect.isawaitable(result):
                awaited = _awaited(result)
                result = loop.run(awaited) if self.client_param is None or clients is None else clients.run(awaited)
            encoded = ActivityTriggerConverter.encode(result, expected_type=None)
        except Exception as exc:  # the activity failed: the orchestrator receives the failure
            return ActivityOutcome(error=exc)
        return ActivityOutcome(result_text=str(encoded.value))


async def _awaited(awaitable: Any) -> Any:
    """Await anything awaitable (``AgentEventLoop.run`` takes a coroutine)."""
    return await awaitable


def activity_failure(exc: BaseException, name: str) -> tuple[str, str]:
    """The ``Reason`` and ``Details`` of a failed activity's TaskFailed, as the orchestrator will see them.

    Args:
        exc: What the activity raised.
        name: The activity.

    Returns:
        The reason (naming the activity and the exception) and the traceback.
    """
    reason = f"Activity function '{name}' failed: {type(exc).__name__}: {exc}"
    return reason, "".join(traceback.format_exception(exc)).rstrip()
