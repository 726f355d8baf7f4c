"""One local host per state directory: a second one would deliver every queued signal and orchestration step again.

The lock is an OS file lock on ``<state_dir>/host.lock`` (``flock``; ``msvcrt.locking`` on Windows), which the
operating system drops when its process ends however it ends, ``kill -9`` included: a crash never leaves a stale lock.
The file holds the owner's process id, to name it when a second host is refused.
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import IO

LOCK_FILE_NAME = "host.lock"


class StateDirectoryInUseError(RuntimeError):
    """Another process holds the state directory's lock."""

    def __init__(self, state_dir: pathlib.Path, owner: str | None) -> None:
        who = f"process {owner}" if owner else "another process"
        super().__init__(
            f"Another local host ({who}) is serving the state directory {state_dir}; two hosts on one directory "
            "would run its queued work twice. Stop that one, or give this one its own --state-dir."
        )
        self.state_dir = state_dir
        self.owner = owner


class StateDirectoryLock:
    """Holds ``<state_dir>/host.lock`` from :meth:`acquire` until :meth:`release` or the end of the process."""

    def __init__(self, state_dir: pathlib.Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / LOCK_FILE_NAME
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock and write this process's id into the file.

        Raises:
            StateDirectoryInUseError: another process (or another host in this one) holds it.
        """
        self.state_dir.mkdir(parents=True, exist_ok=True)
        file = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held open: the open file is the lock)
        try:
            _lock(file)
        except OSError:
            owner = _owner(file)
            file.close()
            raise StateDirectoryInUseError(self.state_dir, owner) from None
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file

    def release(self) -> None:
        """Drop the lock (closing the file does); safe to call twice."""
        file, self._file = self._file, None
        if file is not None:
            file.close()


def _owner(file: IO[str]) -> str | None:
    """The process id the lock's holder wrote, when it can be read (Windows keeps a locked byte unreadable)."""
    try:
        file.seek(0)
        return file.read().strip()[:20] or None
    except OSError:
        return None


def _lock(file: IO[str]) -> None:
    """Lock the whole file without waiting; OSError when another holder has it."""
    if sys.platform == "win32":
        import msvcrt

        file.seek(0)
        msvcrt.locking(file.fileno(), msvcrt.LK_NBLCK, 1)
        return
    import fcntl

    fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
