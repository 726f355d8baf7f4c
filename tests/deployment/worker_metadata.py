"""What the Python worker sends the Functions host for an app: each function's name and its raw binding JSON.

The worker indexes a v2-model app by calling `get_functions()` once and sending, per function, the name and
`get_raw_bindings()` (one JSON document per binding). These helpers read exactly that, so the tests assert on
the documents the host parses, not on the decorator objects that produce them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import azure.functions as func

ROOT = Path(__file__).resolve().parents[2]
MODEL_SETTING_PREFIXES = ("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_")


@dataclass(frozen=True)
class FunctionMetadata:
    """One function as the host receives it.

    Attributes:
        name: The function name.
        bindings: The raw bindings, each parsed from the JSON the worker sends.
        function: The indexed function object (for the local host, which reads the same objects).
    """

    name: str
    bindings: tuple[dict[str, Any], ...]
    function: func.Function

    @property
    def trigger(self) -> dict[str, Any]:
        """The one binding whose type ends in `Trigger`."""
        triggers = [binding for binding in self.bindings if str(binding["type"]).endswith("Trigger")]
        if len(triggers) != 1:
            raise AssertionError(f"{self.name} has {len(triggers)} trigger bindings: {self.bindings}")
        return triggers[0]

    @property
    def user_function(self) -> Callable[..., Any]:
        """The callable the worker invokes."""
        return self.function.get_user_function()

    def bindings_of_type(self, binding_type: str) -> list[dict[str, Any]]:
        """The bindings of one type."""
        return [binding for binding in self.bindings if binding["type"] == binding_type]


def index(app: func.FunctionRegister) -> list[FunctionMetadata]:
    """Index an app as the worker does; `get_functions()` may run only once per app object."""
    return [
        FunctionMetadata(
            name=function.get_function_name(),
            bindings=tuple(json.loads(raw) for raw in function.get_raw_bindings()),
            function=function,
        )
        for function in app.get_functions()
    ]


@contextlib.contextmanager
def offline_environment() -> Iterator[None]:
    """Unset model and host settings for the duration, so the template builds its offline model."""
    saved = {name: value for name, value in os.environ.items() if name.startswith(MODEL_SETTING_PREFIXES)}
    for name in saved:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(saved)


def load_template_module() -> ModuleType:
    """Execute the template's function_app.py as a fresh module, so each call builds a new app object."""
    spec = importlib.util.spec_from_file_location(f"function_app_{uuid.uuid4().hex}", ROOT / "function_app.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {ROOT / 'function_app.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class IndexedApp:
    """An app and the metadata its one indexing produced."""

    app: Any
    functions: list[FunctionMetadata]

    @property
    def http(self) -> list[FunctionMetadata]:
        """The HTTP-triggered functions."""
        return [f for f in self.functions if f.trigger["type"] == "httpTrigger"]

    @property
    def entities(self) -> list[FunctionMetadata]:
        """The entity functions."""
        return [f for f in self.functions if f.trigger["type"] == "entityTrigger"]


def template_app() -> IndexedApp:
    """Build the template app afresh with the offline model and index it."""
    with offline_environment():
        app = load_template_module().app
    return IndexedApp(app, index(app))
