"""What the Python worker refuses when it indexes an app, checked the way it checks, for the direct invoker.

On Azure and under `func start` the worker loads every function before serving any: a parameter without a binding,
a binding without a parameter, an annotation that is not a plain type, or one its binding's converter does not take,
fails the whole app (`FunctionLoadError`). These are the worker's rules (`azure_functions_runtime.functions.Registry`),
applied with the same `azure-functions` converters, so the local host refuses at startup what Azure would refuse after
a deployment. The worker invoker leaves this to the worker's own code. Knows nothing about serving.
"""

from __future__ import annotations

import collections.abc
import inspect
import os
import typing
from collections.abc import Iterable
from typing import Any

import azure.functions as func

from .http_streams import takes_starlette_request

_OUT_DIRECTION = 1
_INOUT_DIRECTION = 2
_RETURN = "$return"
_HTTP_TRIGGER = "httpTrigger"
_HTTP_OUTPUT = "http"
INIT_INDEXING_SETTING = "PYTHON_ENABLE_INIT_INDEXING"
_TRUE = frozenset({"1", "true", "t", "yes", "y"})  # the worker's reading of a boolean setting


class _GenericBinding:
    """The worker's fallback for a binding type no converter is registered for (``GenericBinding``)."""

    @staticmethod
    def check_input_type_annotation(pytype: type) -> bool:
        return issubclass(pytype, (str, bytes))

    @staticmethod
    def check_output_type_annotation(pytype: type) -> bool:
        return issubclass(pytype, (str, bytes, bytearray))


def worker_refusal(reason: str, functions: Iterable[func.Function]) -> ValueError:
    """The startup error for an app the worker would not load: its reason, and what to do when the app mixes the two
    shapes of HTTP function (shared by both invokers)."""
    return ValueError(
        f"The Azure Functions Python worker refuses this app: {reason}. On Azure and under func start none of its "
        f"functions would be served.{_mixed_shapes_hint(list(functions))}"
    )


def _mixed_shapes_hint(functions: list[func.Function]) -> str:
    """What to do about an app whose HTTP functions take both request types ('' when it does not)."""
    http = [
        f
        for f in functions
        if (trigger := f.get_trigger()) is not None and trigger.get_dict_repr().get("type") == _HTTP_TRIGGER
    ]
    streams = [f.get_function_name() for f in http if _takes_fastapi_request(f)]
    classic = [f.get_function_name() for f in http if not _takes_fastapi_request(f)]
    if not (streams and classic):
        return ""
    return (
        f" Function {streams[0]!r} takes the FastAPI request (HTTP streams) but {classic[0]!r} takes "
        "azure.functions.HttpRequest: once HTTP streams are on, the Python worker hands every HTTP function the "
        "FastAPI request, so give all of them that shape (or none)."
    )


def refuse_unindexable(functions: Iterable[func.Function]) -> None:
    """Refuse an app with a function the worker would refuse to load.

    Raises:
        ValueError: naming the first such function and the worker's reason.
    """
    functions = list(functions)
    streams = uses_http_streams(functions)
    for function in functions:
        reason = _refusal(function, streams)
        if reason is not None:
            raise worker_refusal(f"cannot load the {function.get_function_name()} function: {reason}", functions)


def refuse_streams_without_init_indexing(functions: Iterable[func.Function]) -> None:
    """Refuse an HTTP-streams app unless ``PYTHON_ENABLE_INIT_INDEXING`` is on.

    The worker for Python 3.11 and 3.12 starts its HTTP-streams web server only when it indexes the app at startup;
    without the setting it still treats the functions as streams, and every request waits for an answer that never
    comes.

    Raises:
        ValueError: saying what to set and where.
    """
    if uses_http_streams(functions) and (os.environ.get(INIT_INDEXING_SETTING) or "").strip().lower() not in _TRUE:
        raise ValueError(
            f"This app serves HTTP streams (its HTTP functions take FastAPI's request), which needs the app setting "
            f"{INIT_INDEXING_SETTING}=1: without it the Python worker (3.11, 3.12) never starts its HTTP-streams "
            "server and every request waits forever. Set it in local.settings.json (func start and serve) and in the "
            "Function App's settings on Azure, or build the app with http_streams=False."
        )


def uses_http_streams(functions: Iterable[func.Function]) -> bool:
    """Whether the app serves HTTP streams: one of its HTTP functions takes FastAPI's request."""
    return any(_takes_fastapi_request(function) for function in functions)


def _takes_fastapi_request(function: func.Function) -> bool:
    trigger = function.get_trigger()
    if trigger is None or trigger.get_dict_repr().get("type") != _HTTP_TRIGGER:
        return False
    return takes_starlette_request(function.get_user_function(), str(trigger.get_dict_repr().get("name")))


def _binding(binding_type: str) -> Any:
    return func.get_binding_registry().get(binding_type) or _GenericBinding


def _has_implicit_output(binding_type: str | None) -> bool:
    binding = func.get_binding_registry().get(binding_type)
    if binding is None:  # the generic binding: an implicit output, except for the durable client
        return binding_type != "durableClient"
    return bool(getattr(binding, "has_implicit_output", lambda: False)())


def _is_generic(annotation: Any) -> bool:
    """The worker's test for a generic type (``typing_inspect.is_generic_type``): ``typing.List[int]`` is one,
    ``list[int]`` and ``X | None`` are not."""
    if isinstance(annotation, type) and issubclass(annotation, typing.Generic):
        return True
    aliases = (typing._GenericAlias, typing._SpecialGenericAlias)  # type: ignore[attr-defined]
    excluded = (typing.Union, tuple, typing.ClassVar, collections.abc.Callable)
    return isinstance(annotation, aliases) and annotation.__origin__ not in excluded


def _is_out(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) if _is_generic(annotation) else None
    candidate = origin if origin is not None else annotation
    return isinstance(candidate, type) and candidate.__name__ == "Out"


def _check_input(binding_type: str, pytype: type, streams: bool) -> bool:
    if binding_type == _HTTP_TRIGGER and streams:
        from azurefunctions.extensions.base import RequestTrackerMeta

        return bool(RequestTrackerMeta.check_type(pytype))
    return bool(_binding(binding_type).check_input_type_annotation(pytype))


def _check_output(binding_type: str, pytype: type, streams: bool) -> bool:
    if binding_type == _HTTP_OUTPUT and streams:
        from azurefunctions.extensions.base import ResponseTrackerMeta

        return bool(ResponseTrackerMeta.check_type(pytype))
    return bool(_binding(binding_type).check_output_type_annotation(pytype))


def _refusal(function: func.Function, streams: bool) -> str | None:
    """Why the worker would not load this function, or None when it would."""
    user_function = function.get_user_function()
    params = dict(inspect.signature(user_function).parameters)
    try:
        annotations = typing.get_type_hints(user_function)
    except Exception as exc:  # the worker calls the same and fails the app with it
        return f"{type(exc).__name__}: {exc}"
    bound: dict[str, Any] = {}
    explicit_return = False
    return_binding: str | None = None
    for binding in function.get_bindings():
        if binding.direction == _INOUT_DIRECTION:
            return '"inout" bindings are not supported'
        if binding.name == _RETURN:
            if binding.direction != _OUT_DIRECTION:
                return '"$return" binding must have direction set to "out"'
            if not explicit_return:
                return_binding = binding.type
            explicit_return = True
            continue
        if _has_implicit_output(binding.type) and not explicit_return:
            return_binding = binding.type
        bound[binding.name] = binding
    if "context" in params and "context" not in bound:
        params.pop("context")
        context = annotations.get("context", func.Context)
        if not isinstance(context, type) or context.__name__ != "Context":
            return f'the "context" parameter is expected to be of type azure.functions.Context, got "{context!r}"'
    unbound = set(params) - set(bound)
    if unbound:
        return (
            "the following parameters are declared in Python but not in the function definition (function.json or "
            f"function decorators):  {unbound!r}"
        )
    if set(bound) - set(params):
        return (
            "Extra parameters in binding definition — the following parameters are declared as bindings but are not "
            f"present in Python: {set(bound) - set(params)!r}"
        )
    for name in params:
        reason = _parameter_refusal(name, bound[name], annotations, streams)
        if reason is not None:
            return reason
    if explicit_return and "return" in annotations:
        return _return_refusal(annotations["return"], str(return_binding), streams)
    return None  # an implicit output (durable triggers) takes any return annotation


def _parameter_refusal(name: str, binding: Any, annotations: dict[str, Any], streams: bool) -> str | None:
    """Why the worker would refuse one parameter's annotation, or None."""
    if name not in annotations:
        return None
    annotation = annotations[name]
    is_out = _is_out(annotation)
    pytype = annotation
    if is_out:
        arguments = typing.get_args(annotation)
        if len(arguments) != 1:
            return f"binding {name} has invalid Out annotation {annotation!r}"
        pytype = arguments[0]
    if not isinstance(pytype, type) and not _is_generic(pytype):
        return f"binding {name} has invalid non-type annotation {annotation!r}"
    binding_out = binding.direction == _OUT_DIRECTION
    if binding_out and not is_out:
        return (
            f'binding {name} is declared to have the "out" direction, but its annotation in Python is not a subclass '
            "of azure.functions.Out"
        )
    if is_out and not binding_out:
        return (
            f'binding {name} is declared to have the "in" direction in the binding decorator, but its annotation is '
            "azure.functions.Out in Python"
        )
    binding_type = binding.type
    if pytype in (str, bytes) and not _has_implicit_output(binding.type):
        binding_type = "generic"
    checks = _check_output(binding_type, pytype, streams) if is_out else _check_input(binding_type, pytype, streams)
    if checks:
        return None
    type_name = getattr(pytype, "__name__", repr(pytype))
    # The worker compares the binding's data type with `is not` against the message enum's 0: never the same object.
    return (
        f'binding type "{name!r}" and dataType "{binding.type}" in the binding decorator do not match the '
        f"corresponding function parameter's Python type annotation {type_name}"
    )


def _return_refusal(annotation: Any, binding_type: str, streams: bool) -> str | None:
    """Why the worker would refuse a function's return annotation for its ``$return`` binding, or None."""
    if _is_generic(annotation) and _is_out(annotation):
        return "return annotation should not be azure.functions.Out"
    if not isinstance(annotation, type):
        return f"has invalid non-type return annotation {annotation!r}"
    if not _check_output(binding_type, annotation, streams):
        return f'Python return annotation "{annotation.__name__}" does not match binding type "{binding_type}"'
    return None
