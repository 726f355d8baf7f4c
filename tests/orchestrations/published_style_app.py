"""Orchestrations written the way agent-framework-azurefunctions' users write them, with one change: the import.

Its users build `AgentFunctionApp(agents=[...])`, call `app.get_agent(context, name)`, `create_session()`,
`run(messages=..., session=..., options={"response_format": Model})`, yield the task (alone or in `task_all`), read
`.text` and `.value`, and mix in plain Durable Functions: activities, custom status, an external event raced against
a durable timer. Only `clock=` is added, so the test can move time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

from agent_framework import Agent, AgentResponse
from azure.durable_functions import DurableOrchestrationContext
from clocks import ManualClock
from pydantic import BaseModel

# was: from agent_framework_azurefunctions import AgentFunctionApp
from agent_host import AgentFunctionApp, OfflineChatClient

WRITER_AGENT_NAME = "WriterAgent"
PHYSICIST_AGENT_NAME = "PhysicistAgent"
CHEMIST_AGENT_NAME = "ChemistAgent"
HUMAN_APPROVAL_EVENT = "HumanApproval"


class GeneratedContent(BaseModel):
    title: str
    content: str


class HumanApproval(BaseModel):
    approved: bool
    feedback: str = ""


def build_published_style_app(clock: ManualClock) -> AgentFunctionApp:
    """The app, on the offline model."""
    client = OfflineChatClient()
    app = AgentFunctionApp(
        agents=[
            Agent(client=client, name=WRITER_AGENT_NAME, instructions="You are a professional content writer."),
            Agent(client=client, name=PHYSICIST_AGENT_NAME, instructions="You are an expert in physics."),
            Agent(client=client, name=CHEMIST_AGENT_NAME, instructions="You are an expert in chemistry."),
        ],
        clock=clock,
    )

    @app.activity_trigger(input_name="content")
    def notify_user_for_approval(content: dict) -> str:
        return f"notified about {GeneratedContent.model_validate(content).title}"

    @app.activity_trigger(input_name="content")
    def publish_content(content: dict) -> str:
        return f"published {GeneratedContent.model_validate(content).title}"

    @app.orchestration_trigger(context_name="context")
    def single_agent_orchestration(context: DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        writer = app.get_agent(context, WRITER_AGENT_NAME)
        writer_session = writer.create_session()
        initial = yield writer.run(
            messages="Write a concise inspirational sentence about learning.", session=writer_session
        )
        improved_prompt = f"Improve this further while keeping it under 25 words: {initial.text}"
        refined = yield writer.run(messages=improved_prompt, session=writer_session)
        return refined.text

    @app.orchestration_trigger(context_name="context")
    def multi_agent_concurrent_orchestration(context: DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        prompt = context.get_input()
        physicist = app.get_agent(context, PHYSICIST_AGENT_NAME)
        chemist = app.get_agent(context, CHEMIST_AGENT_NAME)
        physicist_task = physicist.run(messages=str(prompt), session=physicist.create_session())
        chemist_task = chemist.run(messages=str(prompt), session=chemist.create_session())
        task_results = yield context.task_all([physicist_task, chemist_task])
        physicist_result = cast(AgentResponse, task_results[0])
        chemist_result = cast(AgentResponse, task_results[1])
        return {"physicist": physicist_result.text, "chemist": chemist_result.text}

    @app.orchestration_trigger(context_name="context")
    def content_generation_hitl_orchestration(context: DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        payload = context.get_input()
        writer = app.get_agent(context, WRITER_AGENT_NAME)
        writer_session = writer.create_session()
        context.set_custom_status(f"Starting content generation for topic: {payload['topic']}")
        initial_raw = yield writer.run(
            messages=f"Write a short article about '{payload['topic']}'.",
            session=writer_session,
            options={"response_format": GeneratedContent},
        )
        content = initial_raw.value
        context.set_custom_status("Requesting human feedback.")
        yield context.call_activity("notify_user_for_approval", content.model_dump())
        approval_task = context.wait_for_external_event(HUMAN_APPROVAL_EVENT)
        timeout_task = context.create_timer(
            context.current_utc_datetime + timedelta(hours=payload["approval_timeout_hours"])
        )
        winner = yield context.task_any([approval_task, timeout_task])
        if winner == approval_task:
            timeout_task.cancel()
            approval = _parse_human_approval(approval_task.result)
            if approval.approved:
                published = yield context.call_activity("publish_content", content.model_dump())
                return {"content": content.content, "published": published}
            return {"rejected": approval.feedback}
        context.set_custom_status("Human approval timed out.")
        raise TimeoutError(f"Human approval timed out after {payload['approval_timeout_hours']} hour(s).")

    return app


def _parse_human_approval(raw: Any) -> HumanApproval:
    if isinstance(raw, Mapping):
        return HumanApproval.model_validate(raw)
    return HumanApproval.model_validate(json.loads(raw))
