"""Function discovery: sorting an app's indexed functions into HTTP routes, entities, orchestrators and activities.

Reads only what ``app.get_functions()`` reports (triggers, bindings, user functions); knows nothing about serving.
"""

from __future__ import annotations

import enum
import inspect
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import azure.functions as func

from .activities import ActivityFunction, ActivityOutcome
from .http_streams import takes_starlette_request
from .route_template import RouteTemplate
from .scheduler import EntityFunction

if TYPE_CHECKING:
    from .invocation import FunctionInvoker

logger = logging.getLogger(__name__)

DEFAULT_TASK_HUB = "LocalHub"
"""Task hub name handed to durable clients whose binding does not name one."""

_DURABLE_TRIGGERS = frozenset({"orchestrationTrigger", "activityTrigger"})


@dataclass
class HttpRoute:
    """An HTTP-triggered function of the app and how to call it.

    Attributes:
        function_name: The function's name.
        route: Its parsed route template.
        methods: Allowed upper-case methods; None allows every method.
        auth_level: ``anonymous``, ``function`` or ``admin``.
        request_param: Parameter receiving the ``HttpRequest``.
        client_param: Parameter receiving the durable client binding JSON, if the function has one.
        task_hub: Task hub named by the durable client binding.
        user_function: The callable to invoke (sync or async).
        context_param: True when the function takes a ``context`` parameter that no binding fills.
        starlette_request: True when it takes the FastAPI (Starlette) request of HTTP streams.
    """

    function_name: str
    route: RouteTemplate
    methods: frozenset[str] | None
    auth_level: str
    request_param: str
    client_param: str | None
    task_hub: str
    user_function: Callable[..., Any]
    context_param: bool = False
    starlette_request: bool = False
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        """Note whether the function must be awaited or run on a thread."""
        self.is_async = inspect.iscoroutinefunction(self.user_function)


def _enum_text(value: Any) -> str:
    """Render a value that may be an enum member or a plain string.

    Args:
        value: An enum member, string or None.

    Returns:
        The enum's value (or the string) as text.
    """
    if isinstance(value, enum.Enum):
        value = value.value
    return "" if value is None else str(value)


def discover_functions(
    functions: Iterable[func.Function], invoker: FunctionInvoker
) -> tuple[list[HttpRoute], dict[str, EntityFunction]]:
    """Sort the app's functions into HTTP routes and entity functions.

    Args:
        functions: The result of ``app.get_functions()``.
        invoker: What runs the entity functions.

    Returns:
        The HTTP routes and the entity functions (through the invoker) keyed by lower-cased entity name.

    Raises:
        ValueError: If two entity functions share a name, or a route template uses syntax the local host refuses.
    """
    routes: list[HttpRoute] = []
    entities: dict[str, EntityFunction] = {}
    for function in functions:
        name = function.get_function_name() or "function"
        trigger = function.get_trigger()
        trigger_dict: dict[str, Any] = trigger.get_dict_repr() if trigger is not None else {}
        trigger_type = trigger_dict.get("type")
        if trigger_type == "entityTrigger":
            entity_name = (trigger_dict.get("entityName") or name).lower()
            if entity_name in entities:
                raise ValueError(f"two entity functions are named {entity_name!r}")
            entities[entity_name] = invoker.entity_function(name, str(trigger_dict.get("name") or "context"))
        elif trigger_type == "httpTrigger":
            routes.append(_http_route(name, function, trigger_dict))
        elif trigger_type == "mcpToolTrigger":
            continue  # served by the MCP endpoint (mcp_tools.py discovers these)
        elif trigger_type not in _DURABLE_TRIGGERS:  # those are found by discover_durable_functions
            logger.warning("function %r has a %s trigger, which the local host does not run", name, trigger_type)
    return routes, entities


def _http_route(name: str, function: func.Function, trigger: dict[str, Any]) -> HttpRoute:
    """Describe one HTTP-triggered function.

    Args:
        name: Function name.
        function: The function object.
        trigger: Its trigger's dict representation.

    Returns:
        The route description.

    Raises:
        ValueError: If its route template uses syntax the local host refuses.
    """
    request_param = str(trigger.get("name") or "req")
    client_param: str | None = None
    task_hub = DEFAULT_TASK_HUB
    bound = {request_param}
    for binding in function.get_bindings():
        info = binding.get_dict_repr()
        binding_type, binding_name = info.get("type"), str(info.get("name"))
        if binding_type == "durableClient":
            client_param = binding_name
            task_hub = str(info.get("taskHub") or DEFAULT_TASK_HUB)
            bound.add(binding_name)
        elif binding_type not in ("httpTrigger", "http"):
            logger.warning(
                "function %r: the local host does not provide %s binding %r", name, binding_type, binding_name
            )
    methods_raw = trigger.get("methods")
    methods = frozenset(_enum_text(m).upper() for m in methods_raw) if methods_raw else None
    try:
        route = RouteTemplate(str(trigger.get("route") or name))
    except ValueError as exc:
        raise ValueError(f"Function {name!r}: {exc}") from None
    user_function = function.get_user_function()
    try:
        parameter_names = set(inspect.signature(user_function).parameters)
    except (TypeError, ValueError):
        parameter_names = set()
    return HttpRoute(
        function_name=name,
        route=route,
        methods=methods,
        auth_level=_enum_text(trigger.get("authLevel") or "function").lower(),
        request_param=request_param,
        client_param=client_param,
        task_hub=task_hub,
        user_function=user_function,
        context_param="context" in parameter_names and "context" not in bound,
        starlette_request=takes_starlette_request(user_function, request_param),
    )


@dataclass(frozen=True)
class OrchestratorFunction:
    """An orchestrator function of the app.

    Attributes:
        name: The function's name (what ``start_new`` and ``call_sub_orchestrator`` name).
        handle: The SDK's handle through the invoker: orchestration context JSON in, state JSON out.
        user_function: What the app registered (the SDK's handle; its ``orchestrator_function`` is the generator).
    """

    name: str
    handle: Callable[[str], str]
    user_function: Callable[..., Any]


@dataclass(frozen=True)
class DurableFunctions:
    """The app's orchestrator and activity functions, each under its lower-cased name (the host's names are
    case-insensitive) and, when the trigger declares another name, under that name too.

    Attributes:
        orchestrators: Orchestrator functions.
        activities: Activity functions.
        run_activity: Runs an activity once through the invoker (``FunctionInvoker.run_activity``).
    """

    orchestrators: dict[str, OrchestratorFunction]
    activities: dict[str, ActivityFunction]
    run_activity: Callable[..., ActivityOutcome]


def discover_durable_functions(functions: Iterable[func.Function], invoker: FunctionInvoker) -> DurableFunctions:
    """Find the orchestrator and activity functions among the app's functions.

    Args:
        functions: The result of ``app.get_functions()``.
        invoker: What runs the orchestrators.

    Returns:
        The orchestrators and activities.

    Raises:
        ValueError: If two orchestrators or two activities share a name.
    """
    orchestrators: dict[str, OrchestratorFunction] = {}
    activities: dict[str, ActivityFunction] = {}
    for function in functions:
        trigger = function.get_trigger()
        trigger_dict: dict[str, Any] = trigger.get_dict_repr() if trigger is not None else {}
        trigger_type = trigger_dict.get("type")
        name = function.get_function_name() or "function"
        if trigger_type == "orchestrationTrigger":
            handle = invoker.orchestrator_handle(name, str(trigger_dict.get("name") or "context"))
            orchestrator = OrchestratorFunction(name, handle, function.get_user_function())
            _register(orchestrators, orchestrator, {name, trigger_dict.get("orchestration")}, "orchestrator")
        elif trigger_type == "activityTrigger":
            activity = ActivityFunction.from_function(function, trigger_dict)
            _register(activities, activity, {name, trigger_dict.get("activity")}, "activity")
    return DurableFunctions(orchestrators, activities, invoker.run_activity)


def _register(registry: dict[str, Any], function: Any, names: set[Any], kind: str) -> None:
    """Register a function under each of its names, lower-cased.

    Args:
        registry: Where to register it.
        function: The function.
        names: Its names (None entries are skipped).
        kind: ``orchestrator`` or ``activity``, for the error message.

    Raises:
        ValueError: If a name is taken by another function.
    """
    for name in {str(n).lower() for n in names if n}:
        if name in registry and registry[name] is not function:
            raise ValueError(f"two {kind} functions are named {name!r}; give each a unique name")
        registry[name] = function
