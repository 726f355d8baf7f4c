"""Pinned npm trees for the tests: a folder's package.json and package-lock.json, installed with `npm ci` once.

httpyac (.tools/httpyac), Azurite (.tools/azurite) and the AG-UI sample's page (samples/agui_web/web) are each pinned,
with their whole dependency tree, in a lockfile. A tree is installed when a package it pins is missing or another
version, at most once per test session, without running install scripts. Where node or npm is missing the tests
that need a tree skip, except under CI (`CI=true`), where .ci/run installs them and a missing one fails.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

NPM_CI = ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]


class NpmUnavailableError(RuntimeError):
    """node or npm is not installed here."""


def node() -> str:
    """The path of node.

    Raises:
        NpmUnavailableError: node or npm is missing.
    """
    found, npm = shutil.which("node"), shutil.which("npm")
    if found is None or npm is None:
        raise NpmUnavailableError("node and npm are needed (Node.js 18 or later, with npm)")
    return found


def _pinned(folder: Path) -> dict[str, str]:
    manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    return {**manifest.get("dependencies", {}), **manifest.get("devDependencies", {})}


def _installed_version(modules: Path, package: str) -> str | None:
    manifest = modules / package / "package.json"
    return json.loads(manifest.read_text(encoding="utf-8"))["version"] if manifest.exists() else None


@functools.cache
def installed_tree(folder: Path) -> Path:
    """`folder`'s node_modules, installed from its lockfile (`npm ci`) unless every package it pins is there already.

    Raises:
        NpmUnavailableError: node or npm is missing.
        RuntimeError: `npm ci` failed.
    """
    node()
    modules = folder / "node_modules"
    if any(_installed_version(modules, name) != version for name, version in _pinned(folder).items()):
        npm = shutil.which("npm") or "npm"
        done = subprocess.run([npm, *NPM_CI], cwd=folder, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"npm ci in {folder} failed:\n{done.stdout}\n{done.stderr}")
    return modules


def require_tree(folder: Path, purpose: str) -> Path:
    """`installed_tree(folder)` for a test `purpose` (what it does with the tree): without node or npm the test
    skips, and under CI, which must have them, it fails."""
    try:
        return installed_tree(folder)
    except NpmUnavailableError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must {purpose}, but {exc}: .ci/run installs them.")
        pytest.skip(f"{exc} to {purpose}")
