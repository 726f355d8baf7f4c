"""The orchestrations the tests run on both hosts: each scenario is the body of an orchestrator, written once against
the agents `get_agent(context, name)` gives (the function app's or the standalone worker's), with the answers the
scripted model gives it. A host's orchestrator is one line: `return (yield from chain(get_agent(context, "writer")))`.

The writer and editor reply with every user message they were sent (`heard_script`), so a reply shows which history
reached the model; with a `response_format` they answer JSON, or a malformed answer when asked for one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from agent_framework import Message
from pydantic import BaseModel

Scenario = Generator[Any, Any, Any]


class Verdict(BaseModel):
    """The structured answer the review orchestration asks for."""

    approved: bool
    reason: str


def heard_script(messages: list[Message], options: Mapping[str, Any]) -> Message:
    """Reply with every user message received, or, for a structured request, a Verdict as JSON."""
    users = [message.text for message in messages if message.role == "user"]
    if options.get("response_format") is not None:
        if "malformed" in users[-1]:
            return Message("assistant", ['{"approved": "perhaps"}'])
        return Message("assistant", [json.dumps({"approved": "ship" in users[-1], "reason": f"read: {users[-1]}"})])
    return Message("assistant", [f"heard: {' | '.join(users)}"])


def chain(writer: Any) -> Scenario:
    """Two turns in one new conversation, the second about the first."""
    session = writer.create_session()
    draft = yield writer.run("Write a haiku about rain.", session=session)
    better = yield writer.run("Make it sadder.", session=session)
    return {"draft": draft.text, "better": better.text, "conversation": session.conversation_id}


CHAIN_ANSWERS = {
    "draft": "heard: Write a haiku about rain.",
    "better": "heard: Write a haiku about rain. | Make it sadder.",
}


def join(writer: Any, request: Mapping[str, str]) -> Scenario:
    """One turn in the conversation `request["conversation"]`, which a person may have started."""
    session = writer.create_session(session_id=request["conversation"])
    response = yield writer.run(request["message"], session=session)
    return response.text


def fan_out(writer: Any, editor: Any, topics: Sequence[str], when_all: Callable[[list[Any]], Any]) -> Scenario:
    """A turn per topic in new conversations of the writer, and one of the editor, all at once (`when_all` is the
    host's: `context.task_all` on Functions, `durabletask.task.when_all` on the worker)."""
    tasks = [writer.run(f"Write about {topic}.", session=writer.create_session()) for topic in topics]
    tasks.append(editor.run("Say which topic is best.", session=editor.create_session()))
    responses = yield when_all(tasks)
    return [response.text for response in responses]


def fan_out_answers(topics: Sequence[str]) -> list[str]:
    """What `fan_out` returns over `topics`, in task order."""
    return [f"heard: Write about {topic}." for topic in topics] + ["heard: Say which topic is best."]


def review(editor: Any, text: str) -> Scenario:
    """A turn answered as a `Verdict`."""
    response = yield editor.run(text, options={"response_format": Verdict})
    verdict = response.value
    return {"type": type(verdict).__name__, "approved": verdict.approved, "reason": verdict.reason}
