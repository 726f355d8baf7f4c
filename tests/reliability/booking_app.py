"""The app the checkpoint kill test serves: a model that asks for `book_flight`, then answers; both slow, both logged.

Served with `python -m agent_host serve --app booking_app:app`. Each model call and each booking appends one line
to its log file before it sleeps, so a SIGKILL during a step leaves the line and the test knows where it struck.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Agent, BaseChatClient, ChatResponse, Content, Message, tool
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

from agent_host import AgentFunctionApp, HostSettings

MODEL_LOG_VARIABLE = "BOOKING_APP_MODEL_LOG"
BOOKINGS_VARIABLE = "BOOKING_APP_BOOKINGS"
STEP_SECONDS_VARIABLE = "BOOKING_APP_STEP_SECONDS"


def append_line(path: str, record: dict[str, Any]) -> None:
    """One O_APPEND write: a complete line even when the process is killed right after."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, (json.dumps(record) + "\n").encode("utf-8"))
    finally:
        os.close(descriptor)


STEP_SECONDS = float(os.environ.get(STEP_SECONDS_VARIABLE, "0"))
MODEL_LOG = os.environ.get(MODEL_LOG_VARIABLE, os.devnull)
BOOKINGS = os.environ.get(BOOKINGS_VARIABLE, os.devnull)


class BookingChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """Asks for `book_flight` first; once the tool answered, says what it said."""

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        last = messages[-1]
        call = 2 if last.role == "tool" else 1
        append_line(MODEL_LOG, {"call": call})
        await asyncio.sleep(STEP_SECONDS)
        if call == 2:
            return ChatResponse(messages=[Message("assistant", [f"done: {last.contents[0].result}"])])
        booking = Content.from_function_call("call-1", "book_flight", arguments={"city": "Oslo"})
        return ChatResponse(messages=[Message("assistant", [booking])])


@tool
async def book_flight(city: str) -> str:
    """Book a flight (a side effect: a line in the bookings file)."""
    append_line(BOOKINGS, {"city": city})
    await asyncio.sleep(STEP_SECONDS)
    return f"booked {city}"


app = AgentFunctionApp(
    [Agent(BookingChatClient(), "You book flights.", name="assistant", tools=[book_flight])],
    settings=HostSettings(run_timeout_seconds=60),
)
