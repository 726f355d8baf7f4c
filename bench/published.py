"""The published host, `agent-framework-azurefunctions`, in a virtual environment of its own under bench/.venvs.

It is installed with pip on first use (pinned), then driven in a subprocess by `published_driver.py`, so its
dependencies never mix with the project's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

PUBLISHED_PACKAGE = "agent-framework-azurefunctions"
PUBLISHED_VERSION = "1.0.0b260922"
BENCH_DIR = Path(__file__).resolve().parent
VENVS_DIR = BENCH_DIR / ".venvs"
DRIVER = BENCH_DIR / "published_driver.py"
INSTALL_TIMEOUT_SECONDS = 900
RUN_TIMEOUT_SECONDS = 3600


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


def measure_published(sizes: list[int], repeats: int, version: str = PUBLISHED_VERSION) -> dict[str, Any]:
    """Section 1 and 2 for the published host: its turn cost, floor and state size at each size.

    Raises:
        PublishedHostUnavailableError: it could not be installed, or its driver failed.
    """
    python = ensure_published_venv(version)
    request = json.dumps({"sizes": sizes, "repeats": repeats})
    try:
        completed = subprocess.run(
            [str(python), str(DRIVER), request],
            check=True,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECONDS,
            cwd=BENCH_DIR.parent,
        )
    except subprocess.CalledProcessError as exc:
        raise PublishedHostUnavailableError(
            f"The published host's driver failed: {exc.stderr.strip()[-1500:]}"
        ) from None
    except subprocess.TimeoutExpired:
        raise PublishedHostUnavailableError(f"The published host's driver ran over {RUN_TIMEOUT_SECONDS} s.") from None
    return json.loads(completed.stdout.strip().splitlines()[-1])
