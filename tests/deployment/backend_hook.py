"""The azd hook that writes host.json for a Durable Functions backend (infra/hooks/durable_backend.py), for tests.

The hook is a standalone script, not part of a package: it is loaded from its file, so the tests exercise exactly
what azd runs. `run_hook` runs it as azd does, in its own process, against a copy of the files it touches.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "infra" / "hooks" / "durable_backend.py"


def load_hook() -> ModuleType:
    """Import the hook script as a module (its constants are the single source of the backend names)."""
    spec = importlib.util.spec_from_file_location("durable_backend", HOOK)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {HOOK}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_app(destination: Path) -> Path:
    """Lay out what the hook touches, as in the repository: host.json at the root, the script under infra/hooks."""
    (destination / "infra" / "hooks").mkdir(parents=True)
    shutil.copy2(HOOK, destination / "infra" / "hooks" / HOOK.name)
    shutil.copy2(ROOT / "host.json", destination / "host.json")
    return destination


def run_hook(root: Path, *arguments: str, backend: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the copy of the hook under `root` with DURABLE_BACKEND set to `backend` (unset when None)."""
    env = {key: value for key, value in os.environ.items() if key != "DURABLE_BACKEND"}
    if backend is not None:
        env["DURABLE_BACKEND"] = backend
    return subprocess.run(
        [sys.executable, str(root / "infra" / "hooks" / HOOK.name), *arguments],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
