"""An app with three agents (writer, editor, broken) and the orchestrators the orchestration tests run.

The orchestrators that also run on the standalone worker are one line each around a scenario of
`orchestration_scenarios` (which also holds the scripted model, `heard_script`, and `Verdict`).
"""

from __future__ import annotations

import azure.durable_functions as df
import orchestration_scenarios as scenarios
from agent_framework import Agent
from chat_clients import FailingChatClient, ScriptedChatClient
from orchestration_scenarios import Verdict, heard_script

from agent_host import AgentFunctionApp, AgentTurnError, HostSettings
from agent_host._clock import SYSTEM_CLOCK, Clock

__all__ = ["Verdict", "build_orchestration_app", "heard_script"]


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
        return (yield from scenarios.chain(app.get_agent(context, "writer")))

    @app.orchestration_trigger(context_name="context")
    def join(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        return (yield from scenarios.join(app.get_agent(context, "writer"), context.get_input()))

    @app.orchestration_trigger(context_name="context")
    def fan_out(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        agents = app.get_agent(context, "writer"), app.get_agent(context, "editor")
        return (yield from scenarios.fan_out(*agents, context.get_input(), context.task_all))

    @app.orchestration_trigger(context_name="context")
    def review(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        return (yield from scenarios.review(app.get_agent(context, "editor"), context.get_input()))

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
