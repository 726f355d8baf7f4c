"""Activity functions as the Functions host knows them: name, trigger parameter and durable client binding.

The input is the text the orchestrator's action carried; the invoker decodes it and encodes the return value with
``ActivityTriggerConverter`` (``df_loads``/``df_dumps``), as the Python worker does on Azure. An activity with a
durable client binding gets the binding JSON, as an HTTP function does. Knows nothing about queues or episodes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import azure.functions as func

from .invocation import InvocationFailedError


@dataclass(frozen=True)
class ActivityOutcome:
    """What one run of an activity produced.

    Attributes:
        result_text: The encoded return value (JSON text), when it succeeded.
        error: How it failed (the exception's ``Type: text`` and traceback), when it did.
    """

    result_text: str | None = None
    error: InvocationFailedError | None = None


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


def activity_failure(error: InvocationFailedError, name: str) -> tuple[str, str]:
    """The ``Reason`` and ``Details`` of a failed activity's TaskFailed, as the orchestrator will see them.

    Args:
        error: How the activity failed.
        name: The activity.

    Returns:
        The reason (naming the activity and the exception) and the traceback.
    """
    return f"Activity function '{name}' failed: {error.message}", error.details.rstrip()
