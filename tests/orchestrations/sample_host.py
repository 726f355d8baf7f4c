"""The orchestrations sample (`samples/orchestrations/function_app.py`) on the local host, with the offline model."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hosting import RunningHost

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = ROOT / "samples" / "orchestrations"
HTTP_FILE = SAMPLE_DIR / "orchestrations.http"
MODEL_SETTINGS = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
FUNCTION_KEY = "local"
_loads = itertools.count()


def load_module(path: Path, prefix: str) -> ModuleType:
    """A fresh module from a file, under a name of its own (a restarted host needs a fresh app object)."""
    name = f"{prefix}_{next(_loads)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered as imported modules are: pydantic resolves a model's postponed annotations in its module.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sample_app() -> Any:
    """A fresh instance of the sample's app."""
    return load_module(SAMPLE_DIR / "function_app.py", "orchestrations_sample").app


@pytest.fixture
def sample_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningHost]:
    """The sample app on the local host (function key `local`), offline model; stopped afterwards."""
    for name in MODEL_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    running = RunningHost(sample_app, tmp_path / "state", function_key=FUNCTION_KEY)
    yield running
    running.stop()
