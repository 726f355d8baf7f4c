"""The package and the template against the oldest `azure-functions` a Functions worker may hand the app.

Under `func start` on Python 3.11 and 3.12, Core Tools' worker puts the `azure-functions` it bundles (1.22.0b4 in
worker 4.34, 1.24.0 in newer ones) ahead of the app's own, unless `PYTHON_ISOLATE_WORKER_DEPENDENCIES=1`. This builds
that situation: a fresh venv holding only `azure-functions` 1.22.0b4 from PyPI, in front of this environment's
packages as the worker's copy is in front of the app's, and runs the package's entity, orchestration, HTTP and
streaming tests and the template's indexing there. The 3.13 worker (`azure-functions-runtime`) loads the app's copy,
so there is nothing to test on 3.13.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLDEST = "1.22.0b4"
SUITES = [
    "tests/entity/test_entity_turns.py",
    "tests/e2e/test_http_contract.py",
    "tests/e2e/test_streaming_http.py",
    "tests/local_host/test_golden_histories.py",
    "tests/orchestrations/test_orchestration_turns.py",
    "tests/expiry/test_agent_task_watch.py",
    "tests/workflows/test_samples.py",
    "tests/deployment/test_function_metadata.py",
    "tests/fidelity",
]
MCP_APP = """
from agent_framework import Agent
from agent_host import AgentFunctionApp, OfflineChatClient

AgentFunctionApp(agents=[Agent(OfflineChatClient(), "Be brief.", name="a")], enable_mcp_tool_trigger=True)
"""

pytestmark = [
    pytest.mark.clean_venv,
    pytest.mark.skipif(sys.version_info >= (3, 13), reason="the 3.13 worker loads the app's own azure-functions"),
]


@pytest.fixture(scope="module")
def worker_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A python whose `azure-functions` is 1.22.0b4, ahead of every other package of this environment."""
    where = tmp_path_factory.mktemp("oldest-azure-functions")
    venv.EnvBuilder(with_pip=True).create(where)
    python = str(where / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", f"azure-functions=={OLDEST}"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    own = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # After the venv's own site-packages: its azure-functions shadows this environment's, as the worker's does.
    Path(own, "zz_app_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def run(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run([python, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_package_and_the_template_work_on_the_oldest_bundled_azure_functions(worker_python: str) -> None:
    version = run(worker_python, "-c", "import azure.functions as f; print(f.__version__)")
    assert version.stdout.strip() == OLDEST, version.stderr

    suites = run(worker_python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES)

    assert suites.returncode == 0, suites.stdout[-4000:] + suites.stderr[-2000:]
    assert " passed" in suites.stdout.splitlines()[-1]


def test_mcp_tools_on_the_bundled_azure_functions_are_refused_naming_the_isolation_setting(worker_python: str) -> None:
    refused = run(worker_python, "-c", MCP_APP)

    assert refused.returncode != 0
    assert f"needs azure-functions 1.26 or later (installed: {OLDEST})" in refused.stderr
    assert "PYTHON_ISOLATE_WORKER_DEPENDENCIES=1" in refused.stderr
