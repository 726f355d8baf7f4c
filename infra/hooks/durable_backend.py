"""Write the host.json of the Durable Functions backend a deployment uses, and put the checked-in one back.

The checked-in host.json configures Azure Storage, so `func start` runs against Azurite. The Durable Task Scheduler
needs `extensions.durableTask.storageProvider` to name it, and only the host.json *file* counts: the platform's
scale controller reads the file, not the app settings that can override it at run time (so an override would run on
the scheduler and scale as if on Azure Storage). azd's prepackage hook therefore calls `apply`, which sets the
checked-in file aside and writes the scheduler's variant for the package; the postpackage hook calls `restore`.

Usage::

    python infra/hooks/durable_backend.py apply [BACKEND]   # BACKEND: $DURABLE_BACKEND, else azureStorage
    python infra/hooks/durable_backend.py restore

Standard library only: azd runs it before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

AZURE_STORAGE = "azureStorage"
DURABLE_TASK_SCHEDULER = "durableTaskScheduler"
BACKENDS = (AZURE_STORAGE, DURABLE_TASK_SCHEDULER)
DEFAULT_BACKEND = AZURE_STORAGE
# The azd environment value (and Bicep parameter `durableBackend`) that chooses the backend.
BACKEND_VARIABLE = "DURABLE_BACKEND"
# The app setting holding the identity-based scheduler connection (Bicep writes it; the extension reads it).
SCHEDULER_CONNECTION_SETTING = "DURABLE_TASK_SCHEDULER_CONNECTION_STRING"
# The provider block Microsoft's quickstart gives for every language, Python included:
# https://learn.microsoft.com/azure/durable-task/scheduler/quickstart-durable-task-scheduler
SCHEDULER_STORAGE_PROVIDER: dict[str, str] = {
    "type": "azureManaged",
    "connectionStringName": SCHEDULER_CONNECTION_SETTING,
}
# Extension bundles older than 4.32.0 do not contain the scheduler's provider (same quickstart).
SCHEDULER_MIN_BUNDLE = (4, 32, 0)

ROOT = Path(__file__).resolve().parents[2]
HOST_JSON = "host.json"
# Under .azure/, which azd owns and both .gitignore and .funcignore leave out.
SAVED_HOST_JSON = Path(".azure") / "durable-backend" / HOST_JSON
_BUNDLE_RANGE = re.compile(r"^\s*\[\s*(?P<low>[0-9*]+(?:\.[0-9*]+)*)\s*,")


def bundle_lower_bound(version_range: str) -> tuple[int, ...]:
    """The lowest bundle version a range like `[4.32.0, 5.0.0)` admits (`*` counts as 0).

    Raises:
        ValueError: the range is not of that form.
    """
    match = _BUNDLE_RANGE.match(version_range)
    if match is None:
        raise ValueError(
            f"extensionBundle.version {version_range!r} is not a range like '[4.32.0, 5.0.0)'; set one in host.json."
        )
    parts = [0 if part == "*" else int(part) for part in match.group("low").split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def scheduler_host_json(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a host.json document that runs Durable Functions on the Durable Task Scheduler.

    Only `extensions.durableTask.storageProvider` changes; it is replaced whole, because the Azure Storage settings
    (partitions, queue polling) mean nothing to the scheduler.

    Raises:
        ValueError: the document's extension bundle is older than the scheduler needs.
    """
    bundle = config.get("extensionBundle", {}).get("version", "")
    if bundle_lower_bound(bundle) < SCHEDULER_MIN_BUNDLE:
        minimum = ".".join(str(part) for part in SCHEDULER_MIN_BUNDLE)
        raise ValueError(
            f"host.json allows extension bundle {bundle!r}, but the Durable Task Scheduler needs {minimum} or "
            f"later; set extensionBundle.version to '[{minimum}, 5.0.0)'."
        )
    updated = copy.deepcopy(config)
    durable_task = updated.setdefault("extensions", {}).setdefault("durableTask", {})
    durable_task["storageProvider"] = dict(SCHEDULER_STORAGE_PROVIDER)
    return updated


def restore(root: Path = ROOT) -> bool:
    """Put back the host.json that `apply` set aside; False when there is none."""
    saved = root / SAVED_HOST_JSON
    if not saved.exists():
        return False
    os.replace(saved, root / HOST_JSON)
    with contextlib.suppress(OSError):  # something else lives there; leaving the folder is harmless
        saved.parent.rmdir()
    return True


def apply(backend: str, root: Path = ROOT) -> str:
    """Make `root/host.json` the one for `backend`; returns what was done, in a sentence.

    A host.json left aside by an interrupted package is put back first, so the checked-in file is always the base.

    Raises:
        ValueError: `backend` is not a known backend, or host.json cannot run it.
    """
    if backend not in BACKENDS:
        raise ValueError(
            f"{BACKEND_VARIABLE} is {backend!r}; use one of {', '.join(BACKENDS)} "
            f"(for example: azd env set {BACKEND_VARIABLE} {DURABLE_TASK_SCHEDULER})."
        )
    restored = restore(root)
    note = " (put back the host.json an interrupted package had set aside)" if restored else ""
    if backend == AZURE_STORAGE:
        return f"host.json: Azure Storage, the checked-in file{note}."
    host_json = root / HOST_JSON
    # Bytes, not text: `restore` must give back the very file, line endings included (text mode would not on Windows).
    original = host_json.read_bytes()
    updated = scheduler_host_json(json.loads(original))
    saved = root / SAVED_HOST_JSON
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_bytes(original)
    host_json.write_bytes((json.dumps(updated, indent=2) + "\n").encode("utf-8"))
    return (
        f"host.json: Durable Task Scheduler ({SCHEDULER_CONNECTION_SETTING}){note}; the checked-in file is in "
        f"{SAVED_HOST_JSON.as_posix()} until `durable_backend.py restore`."
    )


def main(argv: list[str] | None = None) -> int:
    """Run `apply` or `restore` from the command line; exit code 2 for a configuration mistake."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    apply_command = commands.add_parser("apply", help="write host.json for a backend")
    apply_command.add_argument(
        "backend",
        nargs="?",
        default=None,
        help=f"{' or '.join(BACKENDS)} (default: ${BACKEND_VARIABLE}, else {DEFAULT_BACKEND})",
    )
    commands.add_parser("restore", help="put back the checked-in host.json")
    arguments = parser.parse_args(argv)
    if arguments.command == "restore":
        print("host.json: put back the checked-in file." if restore() else "host.json: nothing to put back.")
        return 0
    backend = arguments.backend or os.environ.get(BACKEND_VARIABLE) or DEFAULT_BACKEND
    try:
        print(apply(backend))
    except ValueError as exc:
        print(f"durable_backend.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
