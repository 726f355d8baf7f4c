"""An app with three agents (writer, editor, broken) and the orchestrators the orchestration tests run.

The writer and editor reply with every user message they were sent, so a reply shows which history reached the
model; with a `response_format` they answer JSON, or a malformed answer when asked for one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import azure.durable_functions as df
from agent_framework import Agent, Message
from chat_clients import FailingChatClient, ScriptedChatClient
from pydantic import BaseModel

from agent_host import AgentFunctionApp, AgentTurnError, HostSettings
from agent_host._clock import SYSTEM_CLOCK, Clock


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


def build_orchestration_app(
    writer: ScriptedChatClient | None = None,
    editor: ScriptedChatClient | None = None,
    *,
    settings: HostSettings | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> AgentFunctionApp:
    """The app: agents `writer`, `editor` (scripted) and `broken` (every model call fails), and the orchestrators."""
    app = AgentFunctionApp(
        [
            Agent(writer or ScriptedChatClient(heard_script), name="writer"),
            Agent(editor or ScriptedChatClient(heard_script), name="editor"),
            Agent(FailingChatClient(), name="broken"),
        ],
        # Expiry off by default: these tests play the entity calls only (tests/expiry covers the expiry activity a
        # first turn then carries).
        settings=settings or HostSettings(conversation_ttl_seconds=0),
        clock=clock,
    )

    @app.orchestration_trigger(context_name="context")
    def chain(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        writer = app.get_agent(context, "writer")
        session = writer.create_session()
        draft = yield writer.run("Write a haiku about rain.", session=session)
        better = yield writer.run("Make it sadder.", session=session)
        return {"draft": draft.text, "better": better.text, "conversation": session.conversation_id}

    @app.orchestration_trigger(context_name="context")
    def join(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        request = context.get_input()
        writer = app.get_agent(context, "writer")
        session = writer.create_session(session_id=request["conversation"])
        response = yield writer.run(request["message"], session=session)
        return response.text

    @app.orchestration_trigger(context_name="context")
    def fan_out(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        writer = app.get_agent(context, "writer")
        editor = app.get_agent(context, "editor")
        tasks = [writer.run(f"Write about {topic}.", session=writer.create_session()) for topic in context.get_input()]
        tasks.append(editor.run("Say which topic is best.", session=editor.create_session()))
        responses = yield context.task_all(tasks)
        return [response.text for response in responses]

    @app.orchestration_trigger(context_name="context")
    def review(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        editor = app.get_agent(context, "editor")
        response = yield editor.run(context.get_input(), options={"response_format": Verdict})
        verdict = response.value
        return {"type": type(verdict).__name__, "approved": verdict.approved, "reason": verdict.reason}

    @app.orchestration_trigger(context_name="context")
    def review_or_report(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        editor = app.get_agent(context, "editor")
        try:
            yield editor.run(context.get_input(), options={"response_format": Verdict})
        except AgentTurnError as error:
            return {"error": type(error).__name__, "code": error.code, "message": str(error)}
        return {"error": None}

    @app.orchestration_trigger(context_name="context")
    def catch_failure(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        broken = app.get_agent(context, "broken")
        session = broken.create_session()
        try:
            yield broken.run("Hello?", session=session)
        except AgentTurnError as error:
            return {
                "code": error.code,
                "message": error.message,
                "turn": error.turn_id,
                "conversation": session.session_id,
            }
        return "not failed"

    @app.orchestration_trigger(context_name="context")
    def rounds(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        # A long chain as a loop of short executions: the conversation, not the history, carries what was said.
        request = context.get_input()
        writer = app.get_agent(context, "writer")
        session = writer.create_session(session_id=request.get("conversation"))
        response = yield writer.run(f"Round {request['left']}.", session=session)
        if request["left"] > 1:
            context.continue_as_new({"conversation": session.conversation_id, "left": request["left"] - 1})
            return None
        return response.text

    @app.orchestration_trigger(context_name="context")
    def uncaught_failure(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        broken = app.get_agent(context, "broken")
        yield broken.run("Hello?")
        return "not failed"

    return app
