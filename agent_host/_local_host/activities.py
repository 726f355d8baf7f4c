"""Activity functions as the Functions host runs them: input decoded and result encoded by the worker's converter.

The input is the text the orchestrator's action carried; ``ActivityTriggerConverter`` decodes it (``df_loads``) and
encodes the return value (``df_dumps``), as the Python worker does on Azure. Knows nothing about queues or episodes.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable
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


@dataclass
class ActivityFunction:
    """One activity function of the app.

    Attributes:
        name: The function's name (what ``call_activity`` names).
        parameter: The parameter the activity trigger binds the input to.
        user_function: The function as the app registered it (sync or async).
    """

    name: str
    parameter: str
    user_function: Callable[..., Any]
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
        return cls(
            name=function.get_function_name() or str(trigger.get("activity") or "activity"),
            parameter=str(trigger.get("name") or "input"),
            user_function=function.get_user_function(),
        )

    def run(self, input_text: str | None, loop: AgentEventLoop) -> ActivityOutcome:
        """Run the activity once: decode the input, call the function, encode what it returned.

        Args:
            input_text: The input text from the orchestrator's action (``df_dumps`` of the value).
            loop: Where a coroutine activity runs (one long-lived loop, as the worker's).

        Returns:
            The encoded result, or the exception the function (or the encoding of its result) raised.
        """
        try:
            datum = meta.Datum(input_text if input_text is not None else "null", "string")
            value = ActivityTriggerConverter.decode(datum, trigger_metadata=None)
            result = self.user_function(**{self.parameter: value})
            if inspect.isawaitable(result):
                result = loop.run(_awaited(result))
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
