"""Real servers for the stream store tests: Azurite's Table service (pinned in .tools/azurite) and redis-server.

Azurite is installed from .tools/azurite's lockfile with `npm ci` when missing and runs in memory on a free loopback
port; Redis is started with the Redis sample's own script, samples/redis_history/start_redis.sh. Both are stopped
when their context ends. Used by this folder's fixtures and by measure_latency.py.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from hosting import free_port
from npm_tools import NpmUnavailableError, installed_tree, node

ROOT = Path(__file__).resolve().parents[2]
AZURITE_DIR = ROOT / ".tools" / "azurite"
START_REDIS = ROOT / "samples" / "redis_history" / "start_redis.sh"
# Azurite's one built-in account and its published key (the same for every Azurite; not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class ServiceUnavailableError(RuntimeError):
    """A tool the server needs is missing here (node, npm, redis-server); the message says how to get it."""


def azurite_connection_string(port: int) -> str:
    """The connection string of Azurite's account on `port` (like `UseDevelopmentStorage=true`, another port)."""
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
    )


def installed_azurite() -> Path:
    """The pinned Azurite's Table service entry point, installed with `npm ci` from the lockfile when missing.

    Raises:
        ServiceUnavailableError: node or npm is missing.
        RuntimeError: `npm ci` failed.
    """
    try:
        modules = installed_tree(AZURITE_DIR)
    except NpmUnavailableError as exc:
        raise ServiceUnavailableError(f"{exc} to run Azurite") from exc
    return modules / "azurite" / "dist" / "src" / "table" / "main.js"


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start on 127.0.0.1:{port} (exit code {process.poll()})")
        time.sleep(0.05)


@contextlib.contextmanager
def running_azurite() -> Iterator[str]:
    """Azurite's Table service, in memory on a free loopback port; yields its connection string."""
    entry = installed_azurite()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="azurite-") as workspace:
        process = subprocess.Popen(
            [
                node(),
                str(entry),
                "--tableHost",
                "127.0.0.1",
                "--tablePort",
                str(port),
                "--inMemoryPersistence",
                "--silent",
                "--disableTelemetry",
            ],
            cwd=workspace,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_port(port, process, "Azurite")
            yield azurite_connection_string(port)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@contextlib.contextmanager
def running_redis() -> Iterator[str]:
    """A redis-server started by the Redis sample's start_redis.sh on a free port; yields its URL.

    Raises:
        ServiceUnavailableError: redis-server is missing and the script could not install it.
    """
    port = free_port()
    done = subprocess.run(
        ["bash", str(START_REDIS), str(port)], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        if shutil.which("redis-server") is None:
            raise ServiceUnavailableError(f"redis-server is not installed and could not be installed: {done.stderr}")
        raise RuntimeError(f"{START_REDIS.name} failed:\n{done.stdout}\n{done.stderr}")
    url = re.search(r"^REDIS_URL=(\S+)$", done.stdout, flags=re.MULTILINE)
    data_dir = re.search(r"^data: (\S+)", done.stderr, flags=re.MULTILINE)
    if url is None or data_dir is None:
        raise RuntimeError(f"{START_REDIS.name} printed no REDIS_URL and data folder:\n{done.stdout}\n{done.stderr}")
    try:
        yield url.group(1)
    finally:
        # SHUTDOWN returns once Redis has closed its files (its append-only file is synced, its pid file removed).
        with contextlib.suppress(redis.RedisError), redis.Redis.from_url(url.group(1)) as client:
            client.shutdown(nosave=True)
        shutil.rmtree(data_dir.group(1), ignore_errors=True)
