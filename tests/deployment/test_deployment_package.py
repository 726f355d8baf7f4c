"""Contract: the package a publish uploads holds the app and nothing else, and the app loads from it alone.

`.funcignore` keeps tests, virtual environments, local state, docs and infrastructure out. The package is
built here the way Core Tools builds it (see deployment_package.py); azd reads the same file with git's rules,
and both readings must agree. The slow test installs requirements.txt into a fresh virtual environment and
imports and indexes `function_app` from the unpacked zip, as the Functions host's remote build would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from deployment_package import CoreToolsIgnore, build_zip, package_files
from worker_metadata import template_app

ROOT = Path(__file__).resolve().parents[2]
WORKER_SCRIPT = Path(__file__).with_name("worker_indexing.py")
APP_FILES = {"function_app.py", "host.json", "requirements.txt"}
KEPT_OUT = [
    "tests/",
    ".venv/",
    ".venv-3.13/",
    "docs/",
    "bench/",
    "samples/",
    "infra/",
    ".ci/",
    ".agent_host/",
    ".azure/",
    ".hypothesis/",
    "local.settings.json",
    "local.settings.json.template",
    "README.md",
    "azure.yaml",
    "requirements-dev.txt",
]
# A tree with what a working copy accumulates, including the spots where Core Tools' and git's rules differ.
SAMPLE_TREE = [
    "function_app.py",
    "host.json",
    "requirements.txt",
    "agent_host/__init__.py",
    "agent_host/_local_host/server.py",
    "agent_host/__pycache__/_app.cpython-311.pyc",
    "agent_host/_local_host/__pycache__/server.cpython-313.pyc",
    "__pycache__/function_app.cpython-312.pyc",
    "stray.pyc",
    ".venv/lib/python3.11/site-packages/x.py",
    ".venv-3.12/bin/python",
    ".git/HEAD",
    ".github/workflows/ci.yml",
    ".gitignore",
    ".vscode/settings.json",
    ".azure/dev/.env",
    ".env",
    ".hypothesis/examples/x",
    ".agent_host/entities.sqlite3",
    "__azurite_db_queue__.json",
    "__blobstorage__/x",
    "local.settings.json",
    "local.settings.json.template",
    "tests/unit/test_x.py",
    "tests/data/schemas/host.schema.json",
    "docs/guide.md",
    "infra/main.bicep",
    "azure.yaml",
    "README.md",
    "samples/redis_history/function_app.py",
    "bench/workload.py",
]


def make_tree(root: Path, paths: list[str]) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x", encoding="utf-8")
    shutil.copy(ROOT / ".funcignore", root / ".funcignore")


def test_core_tools_reads_patterns_as_prefixes_not_as_git_does() -> None:
    rules = CoreToolsIgnore("__pycache__/\n.venv*\ntests/\n!tests/keep.py\n")

    assert rules.denies("__pycache__/a.pyc")
    assert not rules.denies("pkg/__pycache__/a.pyc")
    assert not rules.denies(".venv/bin/python")
    assert rules.denies(".venv-3.12/bin/python")
    assert rules.denies("tests/unit/test_x.py")
    assert not rules.denies("tests/keep.py")


def test_core_tools_and_azd_package_the_same_files(tmp_path: Path) -> None:
    make_tree(tmp_path, SAMPLE_TREE)

    core_tools = package_files(tmp_path, semantics="core-tools")
    azd = package_files(tmp_path, semantics="git")

    assert core_tools == azd
    assert core_tools == [
        "agent_host/__init__.py",
        "agent_host/_local_host/server.py",
        "function_app.py",
        "host.json",
        "requirements.txt",
    ]


def test_both_readings_agree_on_this_working_copy() -> None:
    assert package_files(ROOT, semantics="core-tools") == package_files(ROOT, semantics="git")


def test_the_package_holds_the_app_and_nothing_else(tmp_path: Path) -> None:
    entries = build_zip(ROOT, tmp_path / "app.zip")

    with zipfile.ZipFile(tmp_path / "app.zip") as archive:
        names = archive.namelist()

    assert names == entries
    assert set(names) >= APP_FILES
    assert "agent_host/__init__.py" in names
    assert [name for name in names if name not in APP_FILES and not name.startswith("agent_host/")] == []
    assert [name for name in names if name.startswith(tuple(KEPT_OUT)) or "__pycache__" in name] == []
    # Every module of the package ships (a .funcignore pattern matching too much would drop one silently).
    modules = {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "agent_host").rglob("*.py") if "__pycache__" not in p.parts
    }
    assert modules <= set(names)


def _clean_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_"))}
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


_IMPORT_AND_INDEX = """
import json, agent_host, function_app
functions = function_app.app.get_functions()
print(json.dumps({
    "agentHostFile": agent_host.__file__,
    "appType": type(function_app.app).__name__,
    "functions": {f.get_function_name(): [json.loads(b) for b in f.get_raw_bindings()] for f in functions},
}))
"""


@pytest.mark.clean_venv
def test_the_app_imports_and_indexes_from_the_unpacked_package_in_a_fresh_venv(tmp_path: Path) -> None:
    build_zip(ROOT, tmp_path / "app.zip")
    app_dir = tmp_path / "app"
    with zipfile.ZipFile(tmp_path / "app.zip") as archive:
        archive.extractall(app_dir)
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    python = str(tmp_path / "venv" / "bin" / "python")
    env = _clean_environment()
    install = [python, "-m", "pip", "install", "-q", "-r", str(app_dir / "requirements.txt")]
    if sys.version_info >= (3, 13):
        install.append("azure-functions-runtime")  # the worker's indexing code, published for 3.13+
    subprocess.run(install, cwd=app_dir, env=env, check=True, capture_output=True, timeout=600)
    expected = {f.name: list(f.bindings) for f in template_app().functions}

    loaded = subprocess.run(
        [python, "-c", _IMPORT_AND_INDEX], cwd=app_dir, env=env, capture_output=True, text=True, timeout=120
    )
    report = json.loads(loaded.stdout.strip().splitlines()[-1]) if loaded.returncode == 0 else loaded.stderr

    assert isinstance(report, dict), report
    assert Path(report["agentHostFile"]).parent == app_dir / "agent_host"
    assert report["appType"] == "AgentFunctionApp"
    assert report["functions"] == expected
    if sys.version_info >= (3, 13):
        worker = subprocess.run(
            [python, str(WORKER_SCRIPT), str(app_dir)],
            cwd=app_dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert worker.returncode == 0, worker.stderr
        indexed = json.loads(worker.stdout.strip().splitlines()[-1])["functions"]
        assert {entry["name"]: entry["rawBindings"] for entry in indexed} == expected
