"""A worker process for the Durable Task Scheduler contract tests, so a test can kill it with -9 mid-turn.

`python dts_worker.py ENDPOINT TASKHUB CALL_LOG DELAY_SECONDS`: hosts agent `assistant` on a model that appends each
user text it receives to CALL_LOG, waits DELAY_SECONDS, and answers "reply: <text>". Runs until killed.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_framework import Agent, BaseChatClient, ChatResponse, Message
from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

from agent_host import HostSettings
from agent_host.worker import AgentWorker, worker_options


class LoggingChatClient(BaseChatClient[Any]):
    """Logs every call's last user text to a file (which outlives this process), then answers after a delay."""

    def __init__(self, log: Path, delay: float) -> None:
        super().__init__()
        self.log = log
        self.delay = delay

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        text = messages[-1].text or ""
        with self.log.open("a", encoding="utf-8") as log:
            log.write(text + "\n")
        await asyncio.sleep(self.delay)
        return ChatResponse(messages=[Message("assistant", [f"reply: {text}"])])


def credential(endpoint: str) -> Any:
    """No credential for the local emulator (plain HTTP), the default Azure credential for the service."""
    if endpoint.startswith("http://"):
        return None
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


def main(argv: list[str]) -> None:
    endpoint, taskhub, log, delay = argv
    worker = DurableTaskSchedulerWorker(
        host_address=endpoint,
        taskhub=taskhub,
        token_credential=credential(endpoint),
        secure_channel=not endpoint.startswith("http://"),
        **worker_options(),
    )
    agent = Agent(LoggingChatClient(Path(log), float(delay)), "Answer.", name="assistant")
    AgentWorker(worker, [agent], settings=HostSettings(durable_task_scheduler=True))
    worker.start()
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
