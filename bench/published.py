"""The published host, `agent-framework-azurefunctions`, in a virtual environment of its own under bench/.venvs.

It is installed with pip on first use (pinned), then driven in a subprocess by `published_driver.py`, so its
dependencies never mix with the project's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any

PUBLISHED_PACKAGE = "agent-framework-azurefunctions"
PUBLISHED_VERSION = "1.0.0b260922"
BENCH_DIR = Path(__file__).resolve().parent
VENVS_DIR = BENCH_DIR / ".venvs"
DRIVER = BENCH_DIR / "published_driver.py"
INSTALL_TIMEOUT_SECONDS = 900


class PublishedHostUnavailableError(RuntimeError):
    """The published host could not be installed or run; the message says why."""


def venv_python(directory: Path) -> Path:
    """The python executable of a virtual environment."""
    return directory / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def ensure_published_venv(version: str = PUBLISHED_VERSION) -> Path:
    """The python of a virtual environment holding the published host, created and installed if missing.

    Raises:
        PublishedHostUnavailableError: the environment could not be created or the package not installed.
    """
    directory = VENVS_DIR / f"published-{version}"
    python = venv_python(directory)
    marker = directory / ".installed"
    if marker.exists() and python.exists():
        return python
    print(f"Installing {PUBLISHED_PACKAGE}=={version} into {directory} (first run only)...", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=True).create(directory)
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    try:
        subprocess.run(
            [*command, f"{PUBLISHED_PACKAGE}=={version}"],
            check=True,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
        )
    except subprocess.CalledProcessError as exc:
        raise PublishedHostUnavailableError(
            f"pip could not install {PUBLISHED_PACKAGE}=={version}: {exc.stderr.strip()[-800:]}"
        ) from None
    except subprocess.TimeoutExpired:
        raise PublishedHostUnavailableError(
            f"Installing {PUBLISHED_PACKAGE}=={version} took over {INSTALL_TIMEOUT_SECONDS} s."
        ) from None
    marker.write_text(version)
    return python


class PublishedHost:
    """The published host's driver running in its own virtual environment, timing turns on request.

    Use as a context manager; every call waits for the driver's answer. The CPU times it returns are measured in
    the driver's process by the same rule as ours (`workload.cpu_ms`).

    Raises:
        PublishedHostUnavailableError: it could not be installed, or its driver failed or stopped answering.
    """

    def __init__(self, version: str = PUBLISHED_VERSION) -> None:
        python = ensure_published_venv(version)
        # Its log goes to a file: a pipe nobody reads while it runs would fill up and stall it.
        self._log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed by close()
        self._process = subprocess.Popen(
            [str(python), str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=BENCH_DIR.parent,
        )
        hello = self._answer()
        self.version: str = hello["version"]
        self.core_version: str = hello["core_version"]

    def __enter__(self) -> PublishedHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def grow(self, messages: int) -> dict[str, Any]:
        """Grow its conversation to at least `messages` stored messages: `{"messages", "state_bytes"}`."""
        return self._ask({"op": "grow", "messages": messages})

    def turn_ms(self) -> float:
        """The CPU time of one more turn from the conversation as grown."""
        return float(self._ask({"op": "turn"})["ms"])

    def floor_ms(self) -> float:
        """The CPU time of `json.loads` + `json.dumps` of its stored state."""
        return float(self._ask({"op": "floor"})["ms"])

    def close(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            pass  # the driver stopped: `_answer` reports why
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.kill()
            self._process.wait()
            self._log.seek(0)
            stderr = self._log.read()
            raise PublishedHostUnavailableError(f"The published host's driver stopped: {stderr.strip()[-1500:]}")
        return json.loads(line)  # type: ignore[no-any-return]
