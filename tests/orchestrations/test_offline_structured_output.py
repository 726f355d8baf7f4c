"""The offline model answers structured-output requests with JSON that fits the schema, read from the message."""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Literal

from agent_framework import Agent
from pydantic import BaseModel

from agent_host import OfflineChatClient
from agent_host._orchestrations.options import response_format_schema


class Channel(Enum):
    EMAIL = "email"
    PHONE = "phone"


class Ticket(BaseModel):
    category: Literal["billing", "technical", "general"]
    urgent: bool
    summary: str
    priority: int
    channel: Channel
    tags: list[str]
    note: str | None = None


def answer(message: str, response_format: object) -> str:
    agent = Agent(OfflineChatClient(), name="triage")
    return asyncio.run(agent.run(message, options={"response_format": response_format})).text


def test_the_answer_to_a_json_schema_request_validates_as_the_model_and_follows_the_message() -> None:
    text = answer("URGENT: a technical fault, priority 2, call my phone", response_format_schema(Ticket))

    ticket = Ticket.model_validate_json(text)
    assert (ticket.category, ticket.urgent, ticket.priority, ticket.channel) == ("technical", True, 2, Channel.PHONE)
    assert ticket.summary == "[offline model] URGENT: a technical fault, priority 2, call my phone"
    assert (ticket.tags, ticket.note) == ([], "[offline model] URGENT: a technical fault, priority 2, call my phone")


def test_without_a_mention_an_enum_takes_its_first_value_and_a_boolean_is_false() -> None:
    ticket = Ticket.model_validate_json(answer("I have a question.", Ticket))

    assert (ticket.category, ticket.urgent, ticket.priority, ticket.channel) == ("billing", False, 0, Channel.EMAIL)


def test_the_same_request_gets_the_same_answer() -> None:
    assert answer("billing is urgent", Ticket) == answer("billing is urgent", Ticket)
