"""The module the Python worker loads an app from, and what it refuses in it, for `python -m agent_host serve`.

The worker imports the script file at the app's root (`function_app.py`, or the `PYTHON_SCRIPT_FILE_NAME` setting)
and takes the one `FunctionApp` defined at its top level: two of them fail the whole app. `serve --app` may load any
module; it refuses what the worker refuses and warns when the worker would load another file. Knows nothing about
serving.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import azure.functions as func

SCRIPT_FILE_SETTING = "PYTHON_SCRIPT_FILE_NAME"
DEFAULT_SCRIPT_FILE = "function_app.py"


def refuse_second_app(module: ModuleType) -> None:
    """Refuse a module with more than one top-level function app, as the worker's loader does.

    Raises:
        ValueError: naming the apps, with the worker's reason.
    """
    apps = [name for name in module.__dir__() if isinstance(getattr(module, name, None), func.FunctionRegister)]
    if len(apps) > 1:
        kind = type(getattr(module, apps[0])).__name__
        raise ValueError(
            f"Module {module.__name__!r} defines {len(apps)} function apps ({', '.join(apps)}): the Azure Functions "
            f"Python worker refuses it (More than one {kind} or other top level function app instances are defined). "
            "Keep one app at the top level and register the others' functions on it as blueprints."
        )


def script_file_warning(module: ModuleType, script_root: Path) -> str | None:
    """A warning when the worker would load another file than this module (None when it is the same one)."""
    script_name = os.environ.get(SCRIPT_FILE_SETTING) or DEFAULT_SCRIPT_FILE
    expected = (script_root / script_name).resolve()
    module_file = getattr(module, "__file__", None)
    loaded = Path(module_file).resolve() if module_file else None
    if loaded == expected:
        return None
    where = loaded if loaded is not None else f"module {module.__name__!r}"
    return (
        f"The app comes from {where}, but the Azure Functions Python worker loads {expected} (the script root's "
        f"{script_name}): under func start and on Azure this app would not be the one served. Name the file "
        f"{script_name}, or set {SCRIPT_FILE_SETTING}."
    )
