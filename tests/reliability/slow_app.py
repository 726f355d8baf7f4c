"""The app the process-kill test serves: one agent on a model that takes a while per call and logs every call.

Served with `python -m agent_host serve --app slow_app:app`; the log file (one JSON line per model call, written
before the call sleeps) survives a SIGKILL, so the test can tell which turns ran the model and how often.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Agent, BaseChatClient, ChatResponse, Message
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

from agent_host import AgentFunctionApp, HostSettings

CALL_LOG_VARIABLE = "SLOW_APP_CALL_LOG"
DELAY_VARIABLE = "SLOW_APP_DELAY_SECONDS"


def answer_to(message: str) -> str:
    """The text the slow model answers `message` with."""
    return f"answer to {message}"


class SlowLoggingChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A model that appends the last user message to a log file, sleeps, then answers `answer to <message>`."""

    def __init__(self, log_path: str, delay_seconds: float) -> None:
        super().__init__()
        self.log_path = log_path
        self.delay_seconds = delay_seconds

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        text = messages[-1].text or ""
        line = json.dumps({"message": text, "history": len(messages)}) + "\n"
        # One O_APPEND write per call: complete lines even when the process is killed right after.
        descriptor = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, line.encode("utf-8"))
        finally:
            os.close(descriptor)
        await asyncio.sleep(self.delay_seconds)
        return ChatResponse(messages=[Message("assistant", [answer_to(text)])])


# Imported by the test too (for `answer_to`), where no log is set: calls then go to the null device.
client = SlowLoggingChatClient(
    os.environ.get(CALL_LOG_VARIABLE, os.devnull), float(os.environ.get(DELAY_VARIABLE, "0.2"))
)
app = AgentFunctionApp(
    [Agent(client, "You answer every message.", name="assistant")],
    settings=HostSettings(run_timeout_seconds=30),
)
