"""The orchestration test app on a local host that kills its own process at one chosen point, once.

`python -m local_host.crashing_host --state-dir D --port P --die-at before-episode-commit|after-activity --marker M`
serves like `python -m agent_host serve`, and the first time the chosen point is reached (and `M` does not exist yet)
it writes `M` and exits with `os._exit`: no cleanup, nothing committed, exactly as if the process was killed there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from azure.durable_functions.models.history.HistoryEventType import HistoryEventType
from faults import crash_after_activity, crash_before_episode_commit

from agent_host._local_host import LocalHost

from .orchestration_apps import build_orchestration_app

DIED_EXIT_CODE = 137


def die_once(marker: Path, when: Callable[..., bool]) -> Callable[..., bool]:
    """A fault-injection hook that ends the process the first time `when` holds."""

    def hook(*args: Any) -> bool:
        if not marker.exists() and when(*args):
            marker.write_text("died here\n", encoding="utf-8")
            os._exit(DIED_EXIT_CODE)
        return False

    return hook


def delivers_a_completion(instance_id: str, commit: Any) -> bool:
    """The episode takes an activity's completion from the inbox (which is stored) but has not recorded it."""
    return any(event["EventType"] == HistoryEventType.TASK_COMPLETED for event in commit.history)


async def serve(host: LocalHost) -> None:
    await host.start()
    print(f"Listening on {host.base_url}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--die-at", choices=["before-episode-commit", "after-activity"], required=True)
    parser.add_argument("--marker", type=Path, required=True)
    args = parser.parse_args()
    host = LocalHost(build_orchestration_app(), state_dir=args.state_dir, port=args.port)
    if args.die_at == "before-episode-commit":
        crash_before_episode_commit(host.orchestrations, die_once(args.marker, delivers_a_completion))
    else:
        crash_after_activity(host.orchestrations, die_once(args.marker, lambda seq: True))
    asyncio.run(serve(host))


if __name__ == "__main__":
    main()
