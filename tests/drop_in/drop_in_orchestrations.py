"""Apps written as agent-framework-azurefunctions' orchestration samples (04-07) are, with one change: the import.

`04` chains two turns of one agent, `05` runs two agents at once (one without HTTP routes), `06` branches on a spam
verdict given as structured output, `07` waits for a person's approval raced against a durable timer and rewrites on
rejection. Each app has the sample's own start and status routes. Only `clock=` is added to `07`, so a test can move
time; the models are the offline model or, where a branch must be chosen, a scripted one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from agent_framework import Agent, Message
from chat_clients import ScriptedChatClient
from clocks import ManualClock
from pydantic import BaseModel, ValidationError

from agent_host import AgentFunctionApp, OfflineChatClient  # was: from agent_framework_azurefunctions import ...

SPAM_WORDS = ("URGENT", "won", "Click here")


def answer(status: int, body: Any) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype="application/json")


def status_url(req: func.HttpRequest, route: str, instance_id: str) -> str:
    """`{base}/api/{route}/status/{id}`, the base being the request URL before `/api/`."""
    return f"{req.url.split('/api/', 1)[0]}/api/{route}/status/{instance_id}"


def started(req: func.HttpRequest, route: str, instance_id: str, message: str, **fields: Any) -> func.HttpResponse:
    """202 with the samples' start answer: what started, the instance, and where to read its status."""
    uri = status_url(req, route, instance_id)
    return answer(202, {"message": message, **fields, "instanceId": instance_id, "statusQueryGetUri": uri})


def status_body(status: df.DurableOrchestrationStatus) -> dict[str, Any]:
    """An instance's status as the samples' status routes show it."""
    body: dict[str, Any] = {
        "instanceId": status.instance_id,
        "runtimeStatus": status.runtime_status.name if status.runtime_status else None,
        "createdTime": status.created_time.isoformat() if status.created_time else None,
        "lastUpdatedTime": status.last_updated_time.isoformat() if status.last_updated_time else None,
        "workflowStatus": status.custom_status,
    }
    if status.input_ is not None:
        body["input"] = json.loads(status.input_) if isinstance(status.input_, str) else status.input_
    if status.output is not None:
        body["output"] = status.output
    return body


def add_status_route(app: AgentFunctionApp, route: str) -> None:
    """`GET /api/{route}/status/{instanceId}`: 404 for an unknown instance."""

    @app.function_name(f"{route}_status")
    @app.route(route=f"{route}/status/{{instanceId}}", methods=["GET"])
    @app.durable_client_input(client_name="client")
    async def get_status(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        status = await client.get_status(req.route_params["instanceId"], show_input=True)
        if status is None or status.runtime_status is None:
            return answer(404, {"error": "Instance not found."})
        return answer(200, status_body(status))


# 04 single_agent_orchestration_chaining -----------------------------------------------------------------------------


def chaining_app() -> AgentFunctionApp:
    writer = Agent(OfflineChatClient(), "You refine short pieces of text.", name="WriterAgent")
    app = AgentFunctionApp(agents=[writer], enable_health_check=True)

    @app.orchestration_trigger(context_name="context")
    def single_agent_orchestration(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        agent = app.get_agent(context, "WriterAgent")
        session = agent.create_session()
        initial = yield agent.run(messages="Write a concise inspirational sentence about learning.", session=session)
        prompt = f"Improve this further while keeping it under 25 words: {initial.text}"
        refined = yield agent.run(messages=prompt, session=session)
        return refined.text

    @app.route(route="singleagent/run", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def start_single_agent(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        instance_id = await client.start_new("single_agent_orchestration")
        return started(req, "singleagent", instance_id, "Single-agent orchestration started.")

    add_status_route(app, "singleagent")
    return app


# 05 multi_agent_orchestration_concurrency ---------------------------------------------------------------------------


def concurrency_app() -> AgentFunctionApp:
    client = OfflineChatClient()
    physicist = Agent(client, "You are an expert in physics.", name="PhysicistAgent")
    chemist = Agent(client, "You are an expert in chemistry.", name="ChemistAgent")
    app = AgentFunctionApp(enable_health_check=True, enable_http_endpoints=False)
    app.add_agent(physicist, enable_http_endpoint=True)
    app.add_agent(chemist)

    @app.orchestration_trigger(context_name="context")
    def multi_agent_concurrent_orchestration(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        prompt = context.get_input()
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("A prompt is required.")
        first = app.get_agent(context, "PhysicistAgent")
        second = app.get_agent(context, "ChemistAgent")
        results = yield context.task_all(
            [
                first.run(messages=prompt, session=first.create_session()),
                second.run(messages=prompt, session=second.create_session()),
            ]
        )
        return {"physicist": results[0].text, "chemist": results[1].text}

    @app.route(route="multiagent/run", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def start_multi_agent(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        prompt = (req.get_body() or b"").decode("utf-8").strip()
        if not prompt:
            return answer(400, {"error": "Prompt is required"})
        instance_id = await client.start_new("multi_agent_concurrent_orchestration", client_input=prompt)
        return started(req, "multiagent", instance_id, "Multi-agent concurrent orchestration started.", prompt=prompt)

    add_status_route(app, "multiagent")
    return app


# 06 multi_agent_orchestration_conditionals --------------------------------------------------------------------------


class SpamDetectionResult(BaseModel):
    is_spam: bool
    reason: str


class EmailResponse(BaseModel):
    response: str


class EmailPayload(BaseModel):
    email_id: str
    email_content: str


def spam_verdict(messages: list[Message], options: Mapping[str, Any]) -> Message:
    """A spam filter of a model: spam when the email shouts about winnings, as JSON for the requested format."""
    text = messages[-1].text or ""
    found = [word for word in SPAM_WORDS if word in text]
    reason = f"it says {', '.join(found)}" if found else "it reads like an ordinary message"
    return Message("assistant", [json.dumps({"is_spam": bool(found), "reason": reason})])


def conditionals_app() -> AgentFunctionApp:
    spam = Agent(ScriptedChatClient(spam_verdict), "You detect spam.", name="SpamDetectionAgent")
    assistant = Agent(OfflineChatClient(), "You answer emails politely.", name="EmailAssistantAgent")
    app = AgentFunctionApp(agents=[spam, assistant], enable_health_check=True)

    @app.activity_trigger(input_name="reason")
    def handle_spam_email(reason: str) -> str:
        return f"Email marked as spam: {reason}"

    @app.activity_trigger(input_name="message")
    def send_email(message: str) -> str:
        return f"Email sent: {message}"

    @app.orchestration_trigger(context_name="context")
    def spam_detection_orchestration(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        email = EmailPayload.model_validate(context.get_input())
        detector = app.get_agent(context, "SpamDetectionAgent")
        verdict = yield detector.run(
            messages=f"Is this email spam?\nEmail ID: {email.email_id}\nContent: {email.email_content}",
            session=detector.create_session(),
            options={"response_format": SpamDetectionResult},
        )
        if verdict.value.is_spam:
            return (yield context.call_activity("handle_spam_email", verdict.value.reason))
        writer = app.get_agent(context, "EmailAssistantAgent")
        reply = yield writer.run(
            messages=f"Write a reply to: {email.email_content}",
            session=writer.create_session(),
            options={"response_format": EmailResponse},
        )
        return (yield context.call_activity("send_email", reply.value.response))

    @app.route(route="spamdetection/run", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def start_spam_detection(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        try:
            email = EmailPayload.model_validate_json(req.get_body())
        except ValidationError as exc:
            return answer(400, {"error": f"Invalid email payload: {exc.error_count()} problem(s)."})
        instance_id = await client.start_new("spam_detection_orchestration", client_input=email.model_dump())
        return started(
            req, "spamdetection", instance_id, "Spam detection orchestration started.", emailId=email.email_id
        )

    add_status_route(app, "spamdetection")
    return app


# 07 single_agent_orchestration_hitl ---------------------------------------------------------------------------------

HUMAN_APPROVAL_EVENT = "HumanApproval"


class ContentGenerationInput(BaseModel):
    topic: str
    max_review_attempts: int = 3
    approval_timeout_hours: float = 72


class GeneratedContent(BaseModel):
    title: str
    content: str


class HumanApproval(BaseModel):
    approved: bool
    feedback: str = ""


def hitl_app(clock: ManualClock) -> AgentFunctionApp:
    writer = Agent(
        OfflineChatClient(), "You write short articles as JSON with a title and content.", name="WriterAgent"
    )
    app = AgentFunctionApp(agents=[writer], enable_health_check=True, clock=clock)

    @app.activity_trigger(input_name="content")
    def notify_user_for_approval(content: dict) -> str:  # type: ignore[type-arg]
        return f"A reviewer was asked about {GeneratedContent.model_validate(content).title!r}."

    @app.activity_trigger(input_name="content")
    def publish_content(content: dict) -> str:  # type: ignore[type-arg]
        return f"Published {GeneratedContent.model_validate(content).title!r}."

    @app.orchestration_trigger(context_name="context")
    def content_generation_hitl_orchestration(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        request = ContentGenerationInput.model_validate(context.get_input())
        agent = app.get_agent(context, "WriterAgent")
        session = agent.create_session()
        context.set_custom_status(f"Starting content generation for topic: {request.topic}")
        draft = yield agent.run(
            messages=f"Write a short article about '{request.topic}'.",
            session=session,
            options={"response_format": GeneratedContent},
        )
        content = draft.value
        hours = request.approval_timeout_hours
        for attempt in range(1, request.max_review_attempts + 1):
            context.set_custom_status(f"Requesting human feedback. Iteration #{attempt}. Timeout: {hours} hour(s).")
            yield context.call_activity("notify_user_for_approval", content.model_dump())
            approval_task = context.wait_for_external_event(HUMAN_APPROVAL_EVENT)
            timer = context.create_timer(context.current_utc_datetime + timedelta(hours=hours))
            winner = yield context.task_any([approval_task, timer])
            if winner != approval_task:
                context.set_custom_status(f"Human approval timed out after {hours} hour(s). Treating as rejection.")
                raise TimeoutError(f"Human approval timed out after {hours} hour(s).")
            timer.cancel()
            approval = parse_approval(approval_task.result)
            if approval.approved:
                context.set_custom_status("Content approved by human reviewer. Publishing content...")
                yield context.call_activity("publish_content", content.model_dump())
                published_at = context.current_utc_datetime.strftime("%Y-%m-%dT%H:%M:%S")
                context.set_custom_status(f"Content published successfully at {published_at}")
                return {"content": content.content}
            context.set_custom_status("Content rejected by human reviewer. Incorporating feedback and regenerating...")
            if attempt == request.max_review_attempts:
                break
            rewrite = yield agent.run(
                messages=(
                    f"Rewrite the article about '{request.topic}'. "
                    f"Human Feedback: {approval.feedback or 'No feedback provided.'}"
                ),
                session=session,
                options={"response_format": GeneratedContent},
            )
            content = rewrite.value
        context.set_custom_status("Max review attempts exhausted.")
        raise RuntimeError(f"Content could not be approved after {request.max_review_attempts} iteration(s).")

    @app.route(route="hitl/run", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def start_content_generation(
        req: func.HttpRequest, client: df.DurableOrchestrationClient
    ) -> func.HttpResponse:
        try:
            request = ContentGenerationInput.model_validate_json(req.get_body())
        except ValidationError:
            return answer(400, {"error": 'Send {"topic": "..."}: the topic is required.'})
        instance_id = await client.start_new("content_generation_hitl_orchestration", client_input=request.model_dump())
        return started(req, "hitl", instance_id, "HITL content generation orchestration started.", topic=request.topic)

    @app.route(route="hitl/approve/{instanceId}", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def send_approval(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        try:
            approval = HumanApproval.model_validate_json(req.get_body())
        except ValidationError:
            return answer(400, {"error": 'Send {"approved": true|false, "feedback": "..."}.'})
        instance_id = req.route_params["instanceId"]
        await client.raise_event(instance_id, HUMAN_APPROVAL_EVENT, approval.model_dump())
        return answer(
            200,
            {
                "message": "Human approval sent to orchestration.",
                "instanceId": instance_id,
                "approved": approval.approved,
            },
        )

    add_status_route(app, "hitl")
    return app


def parse_approval(raw: Any) -> HumanApproval:
    """The reviewer's answer: a mapping, JSON text, or a plain yes or no."""
    if isinstance(raw, Mapping):
        return HumanApproval.model_validate(raw)
    text = str(raw).strip()
    try:
        return HumanApproval.model_validate_json(text)
    except ValidationError:
        return HumanApproval(approved=text.lower() in ("yes", "y", "true", "approved"), feedback=text)
