"""Sample app: Agent Framework agents inside Durable Functions orchestrations.

Four orchestrations, each started over HTTP (`POST /api/orchestrations/{name}`, see `orchestrations.http`):

- `chain`: sequential chaining. The writer drafts and revises in one conversation, then the editor polishes.
- `fan_out`: fan-out/fan-in. Three agents answer at once (`task_all`); the writer combines their answers.
- `triage`: a conditional on structured output. The triage agent answers a `Triage`; urgent tickets are
  escalated by the editor, the others answered by the writer.
- `approval`: human approval. The writer drafts, then the orchestration waits for an `approval` event raced
  against a timer (`POST /api/orchestrations/instances/{id}/approval` sends it); a person can take turns in the
  draft's conversation over the agents' HTTP API meanwhile.

Every agent turn is a turn of a durable conversation (`/api/agents/{agent}/conversations/{id}`). With no model
settings the offline model answers. Run it from this folder (README.md):
`PYTHONPATH=../.. ../../.venv/bin/python -m agent_host serve --app function_app:app`.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from typing import Any, Literal

import azure.durable_functions as df
import azure.functions as func
from agent_framework import Agent
from pydantic import BaseModel

from agent_host import AgentFunctionApp, chat_client_from_settings

# Azure OpenAI, OpenAI or an OpenAI-compatible server when configured, otherwise the offline model.
client = chat_client_from_settings()


def _agent(name: str, instructions: str) -> Agent:
    # The conversation lives in the durable entity, not in the model service (the Responses API stores by default).
    return Agent(client, instructions, name=name, default_options={"store": False})


app = AgentFunctionApp(
    agents=[
        _agent("writer", "You write short, vivid texts and revise them when asked."),
        _agent("editor", "You polish texts: fix the rhythm, keep the meaning, answer with the text only."),
        _agent("critic", "You say in one sentence what works and what does not."),
        _agent("triage", "You classify support tickets."),
    ]
)


class Triage(BaseModel):
    """The triage agent's structured answer."""

    category: Literal["billing", "technical", "general"]
    urgent: bool
    summary: str


class Approval(BaseModel):
    """What the approval route sends the waiting orchestration."""

    approved: bool
    feedback: str = ""


APPROVAL_EVENT = "approval"


@app.orchestration_trigger(context_name="context")
def chain(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
    """Draft, revise in the same conversation (the writer remembers its draft), then polish with the editor."""
    topic = (context.get_input() or {}).get("topic", "rain")
    writer = app.get_agent(context, "writer")
    session = writer.create_session()
    draft = yield writer.run(f"Write a haiku about {topic}.", session=session)
    sadder = yield writer.run("Make it sadder.", session=session)
    editor = app.get_agent(context, "editor")
    final = yield editor.run(f"Polish this haiku: {sadder.text}", session=editor.create_session())
    return {"conversationId": session.conversation_id, "draft": draft.text, "sadder": sadder.text, "final": final.text}


@app.orchestration_trigger(context_name="context")
def fan_out(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
    """Ask three agents at once, then have the writer combine their answers."""
    question = (context.get_input() or {}).get("question", "What makes a good haiku?")
    names = ["writer", "editor", "critic"]
    agents = [app.get_agent(context, name) for name in names]
    answers = yield context.task_all([agent.run(question, session=agent.create_session()) for agent in agents])
    writer = agents[0]
    combined = "\n".join(f"{name}: {answer.text}" for name, answer in zip(names, answers, strict=True))
    summary = yield writer.run(f"Combine these answers into one: {combined}", session=writer.create_session())
    return {
        "answers": {name: answer.text for name, answer in zip(names, answers, strict=True)},
        "summary": summary.text,
    }


@app.orchestration_trigger(context_name="context")
def triage(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
    """Classify a ticket with structured output, then branch on it."""
    ticket = (context.get_input() or {}).get("ticket", "")
    classified = yield app.get_agent(context, "triage").run(
        f"Classify this ticket: {ticket}", options={"response_format": Triage}
    )
    verdict: Triage = classified.value
    if verdict.urgent:
        route, agent = "escalation", app.get_agent(context, "editor")
        prompt = f"Write an escalation note for the on-call {verdict.category} engineer: {ticket}"
    else:
        route, agent = "reply", app.get_agent(context, "writer")
        prompt = f"Write a friendly reply to this {verdict.category} ticket: {ticket}"
    answer = yield agent.run(prompt)
    return {"category": verdict.category, "urgent": verdict.urgent, "route": route, "text": answer.text}


@app.orchestration_trigger(context_name="context")
def approval(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
    """Draft, then wait for a person's approval or a timeout, whichever comes first."""
    request = context.get_input() or {}
    writer = app.get_agent(context, "writer")
    session = writer.create_session()
    draft = yield writer.run(f"Write a short announcement about {request.get('topic', 'our launch')}.", session=session)
    context.set_custom_status(
        {"stage": "awaiting approval", "conversationId": session.conversation_id, "draft": draft.text}
    )
    decision = context.wait_for_external_event(APPROVAL_EVENT)
    deadline = context.create_timer(
        context.current_utc_datetime + timedelta(seconds=request.get("timeoutSeconds", 3600))
    )
    winner = yield context.task_any([decision, deadline])
    if winner is not decision:
        context.set_custom_status({"stage": "timed out", "conversationId": session.conversation_id})
        return {"outcome": "timed out", "conversationId": session.conversation_id, "draft": draft.text}
    deadline.cancel()
    answer = Approval.model_validate(_event_data(decision.result))
    if answer.approved:
        final = yield writer.run("Approved. Write the final version.", session=session)
        outcome = "published"
    else:
        final = yield writer.run(f"Rejected: {answer.feedback or 'no reason given'}. Revise it.", session=session)
        outcome = "revised"
    context.set_custom_status({"stage": outcome, "conversationId": session.conversation_id})
    return {"outcome": outcome, "conversationId": session.conversation_id, "text": final.text}


def _event_data(data: Any) -> Any:
    # An event raised through the durable client arrives as its JSON text.
    return json.loads(data) if isinstance(data, str) else data


# --- HTTP: start an orchestration and wait a little for it, read one, approve one ------------------------------------

ORCHESTRATIONS = ("chain", "fan_out", "triage", "approval")
TERMINAL = {
    df.OrchestrationRuntimeStatus.Completed,
    df.OrchestrationRuntimeStatus.Failed,
    df.OrchestrationRuntimeStatus.Terminated,
}
WAIT_SECONDS = 30.0
MAX_WAIT_SECONDS = 60.0


@app.function_name("sample_start")
@app.route(route="orchestrations/{name}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def start(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """Start orchestration `name` with the JSON body as its input.

    Answers when it finishes, when it reports that it awaits a person (its custom status), or after 30 s.
    """
    name = req.route_params["name"]
    if name not in ORCHESTRATIONS:
        return _error(
            404, "orchestration_not_found", f"No orchestration '{name}'; use one of {', '.join(ORCHESTRATIONS)}."
        )
    body = _json_body(req)
    if body is None:
        return _error(400, "invalid_json", 'Send a JSON object, e.g. {"topic": "rain"}.')
    instance_id = await client.start_new(name, client_input=body)
    return await _status_response(client, instance_id, WAIT_SECONDS, until_awaiting=True)


@app.function_name("sample_status")
@app.route(route="orchestrations/instances/{instanceId}", methods=["GET"])
@app.durable_client_input(client_name="client")
async def status(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """An orchestration's status, custom status and output; `?waitSeconds=10` waits up to 10 s for it to finish."""
    try:
        wait = float(req.params.get("waitSeconds", "0"))
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= MAX_WAIT_SECONDS:
        return _error(400, "invalid_wait", f"waitSeconds must be a number from 0 to {MAX_WAIT_SECONDS:g}.")
    return await _status_response(client, req.route_params["instanceId"], wait)


@app.function_name("sample_approval")
@app.route(route="orchestrations/instances/{instanceId}/approval", methods=["POST"])
@app.durable_client_input(client_name="client")
async def approve(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """Send `{"approved": true|false, "feedback": "..."}` to a waiting approval; answer when it finishes."""
    instance_id = req.route_params["instanceId"]
    body = _json_body(req)
    try:
        answer = Approval.model_validate(body)
    except ValueError:
        return _error(400, "invalid_approval", 'Send {"approved": true} or {"approved": false, "feedback": "..."}.')
    current = await client.get_status(instance_id)
    if current.runtime_status is None:
        return _error(404, "instance_not_found", f"No orchestration instance '{instance_id}'.")
    if current.runtime_status in TERMINAL:
        return _error(
            409, "not_waiting", f"Orchestration '{instance_id}' already finished ({current.runtime_status.value})."
        )
    await client.raise_event(instance_id, APPROVAL_EVENT, answer.model_dump())
    return await _status_response(client, instance_id, WAIT_SECONDS)


async def _status_response(
    client: df.DurableOrchestrationClient, instance_id: str, wait: float, *, until_awaiting: bool = False
) -> func.HttpResponse:
    """200 with the output once the orchestration finished, 202 while it runs, 404 for an unknown instance.

    Polls for up to `wait` seconds, or, with `until_awaiting`, until it reports a stage that awaits someone.
    """
    deadline = time.monotonic() + wait
    delay = 0.05
    while True:
        current = await client.get_status(instance_id)
        if current.runtime_status is None:
            return _error(404, "instance_not_found", f"No orchestration instance '{instance_id}'.")
        if current.runtime_status in TERMINAL or time.monotonic() >= deadline:
            break
        if until_awaiting and str((current.custom_status or {}).get("stage", "")).startswith("awaiting"):
            break
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
    body = {
        "id": instance_id,
        "name": current.name,
        "status": current.runtime_status.value,
        "customStatus": current.custom_status,
        "output": current.output,
    }
    return _json(200 if current.runtime_status in TERMINAL else 202, body)


def _json_body(req: func.HttpRequest) -> dict[str, Any] | None:
    try:
        body = req.get_json() if req.get_body() else {}
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _error(status_code: int, code: str, message: str) -> func.HttpResponse:
    return _json(status_code, {"error": {"code": code, "message": message}})


def _json(status_code: int, body: Any) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(body), status_code=status_code, mimetype="application/json")
