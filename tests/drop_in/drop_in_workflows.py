"""Apps written as agent-framework-azurefunctions' workflow samples (09-12) are, with one change: the import.

`09` triages an email with shared state and two agents, `10` starts at an agent (which takes a JSON object as its
text) and switches on its verdict, `11` fans out to processors and agents and back in three times, `12` asks a person
to approve an agent's content analysis and mails the respond URL built with `WorkflowHitlContext`. Each app hosts one
workflow with `AgentFunctionApp(workflow=...)`. Agents answer on the offline model (structured output fitting the
schema), or on a scripted spam filter where a branch must be chosen.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Never

from agent_framework import (
    Agent,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Case,
    Default,
    Executor,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
    response_handler,
)
from chat_clients import ScriptedChatClient
from pydantic import BaseModel, ValidationError

from agent_host import AgentFunctionApp, OfflineChatClient, WorkflowHitlContext  # was: agent_framework_azurefunctions

logger = logging.getLogger("drop_in.workflows")
SPAM_WORDS = ("URGENT", "won", "Click here")


def spam_filter(messages: list[Message], options: Mapping[str, Any]) -> Message:
    """A model that calls an email spam when it shouts about winnings, answering JSON with a verdict and reason."""
    text = messages[-1].text or ""
    found = [word for word in SPAM_WORDS if word in text]
    verdict = {"is_spam": bool(found), "confidence": 0.9 if found else 0.1}
    verdict["reason"] = f"it says {', '.join(found)}" if found else "an ordinary message"
    return Message("assistant", [json.dumps(verdict)])


class EmailResponse(BaseModel):
    response: str


def structured_agent(client: Any, instructions: str, name: str, result: type[BaseModel]) -> Agent:
    """An agent whose every answer is structured output of `result` (`default_options`, as the samples set it)."""
    return Agent(client, instructions, name=name, default_options={"response_format": result})


# 09 workflow_shared_state -------------------------------------------------------------------------------------------


@dataclass
class Email:
    email_id: str
    email_content: str


class DetectionResultAgent(BaseModel):
    is_spam: bool
    reason: str


@dataclass
class DetectionResult:
    is_spam: bool
    reason: str
    email_id: str


@executor(id="store_email")
async def store_email(email_text: str, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
    email = Email(email_id=str(uuid.uuid4()), email_content=email_text)
    ctx.set_state(f"email:{email.email_id}", email)
    ctx.set_state("current_email_id", email.email_id)
    await ctx.send_message(AgentExecutorRequest(messages=[Message("user", [email_text])], should_respond=True))


@executor(id="to_detection_result")
async def to_detection_result(response: AgentExecutorResponse, ctx: WorkflowContext[DetectionResult]) -> None:
    try:
        verdict = DetectionResultAgent.model_validate_json(response.agent_response.text)
    except ValidationError:
        verdict = DetectionResultAgent(is_spam=True, reason="the verdict could not be read")
    await ctx.send_message(DetectionResult(verdict.is_spam, verdict.reason, ctx.get_state("current_email_id")))


@executor(id="submit_to_email_assistant")
async def submit_to_email_assistant(detection: DetectionResult, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
    email: Email = ctx.get_state(f"email:{detection.email_id}")
    request = Message("user", [f"Reply to this email: {email.email_content}"])
    await ctx.send_message(AgentExecutorRequest(messages=[request], should_respond=True))


@executor(id="finalize_and_send")
async def finalize_and_send(response: AgentExecutorResponse, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"Email sent: {EmailResponse.model_validate_json(response.agent_response.text).response}")


@executor(id="handle_spam")
async def handle_spam(detection: DetectionResult, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"Email marked as spam: {detection.reason}")


def is_spam(expected: bool) -> Any:
    """An edge condition: the detection says spam (or not); anything else passes."""
    return lambda message: not isinstance(message, DetectionResult) or message.is_spam == expected


def shared_state_app() -> AgentFunctionApp:
    detector = structured_agent(
        ScriptedChatClient(spam_filter), "You detect spam.", "spam_detection_agent", DetectionResultAgent
    )
    assistant = structured_agent(OfflineChatClient(), "You answer emails.", "email_assistant_agent", EmailResponse)
    workflow = (
        WorkflowBuilder(
            name="email_triage_shared_state", start_executor=store_email, output_from=[handle_spam, finalize_and_send]
        )
        .add_edge(store_email, detector)
        .add_edge(detector, to_detection_result)
        .add_edge(to_detection_result, submit_to_email_assistant, condition=is_spam(False))
        .add_edge(to_detection_result, handle_spam, condition=is_spam(True))
        .add_edge(submit_to_email_assistant, assistant)
        .add_edge(assistant, finalize_and_send)
        .build()
    )
    return AgentFunctionApp(workflow=workflow, enable_health_check=True)


# 10 workflow_no_shared_state ----------------------------------------------------------------------------------------


class SpamDetectionResult(BaseModel):
    is_spam: bool
    confidence: float
    reason: str


def is_spam_detected(message: Any) -> bool:
    if not isinstance(message, AgentExecutorResponse):
        return False
    try:
        return SpamDetectionResult.model_validate_json(message.agent_response.text).is_spam
    except ValidationError:
        return False


class SpamHandlerExecutor(Executor):
    @handler
    async def handle(self, response: AgentExecutorResponse, ctx: WorkflowContext[Never, str]) -> None:
        verdict = SpamDetectionResult.model_validate_json(response.agent_response.text)
        await ctx.yield_output(f"Email marked as spam: {verdict.reason}")


class EmailSenderExecutor(Executor):
    @handler
    async def send(self, response: AgentExecutorResponse, ctx: WorkflowContext[Never, str]) -> None:
        try:
            await ctx.yield_output(
                f"Email sent: {EmailResponse.model_validate_json(response.agent_response.text).response}"
            )
        except ValidationError:
            await ctx.yield_output("Email sent: Error generating response.")


def no_shared_state_app(spam_client: ScriptedChatClient) -> AgentFunctionApp:
    spam_agent = structured_agent(spam_client, "You detect spam.", "SpamDetectionAgent", SpamDetectionResult)
    email_agent = structured_agent(OfflineChatClient(), "You answer emails.", "EmailAssistantAgent", EmailResponse)
    spam_handler = SpamHandlerExecutor(id="spam_handler")
    email_sender = EmailSenderExecutor(id="email_sender")
    workflow = (
        WorkflowBuilder(name="email_triage", start_executor=spam_agent)
        .add_switch_case_edge_group(
            spam_agent, [Case(condition=is_spam_detected, target=spam_handler), Default(target=email_agent)]
        )
        .add_edge(email_agent, email_sender)
        .build()
    )
    return AgentFunctionApp(workflow=workflow)


# 11 workflow_parallel -----------------------------------------------------------------------------------------------


@dataclass
class DocumentInput:
    document_id: str
    content: str


@dataclass
class ProcessorResult:
    processor_name: str
    document_id: str
    content: str
    word_count: int
    char_count: int
    has_numbers: bool


@dataclass
class AggregatedResults:
    document_id: str
    content: str
    results: list[ProcessorResult] = field(default_factory=list)


class SentimentResult(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]
    confidence: float


class KeywordResult(BaseModel):
    keywords: list[str]


class SummaryResult(BaseModel):
    summary: str


@executor(id="input_router")
async def input_router(document: DocumentInput, ctx: WorkflowContext[DocumentInput]) -> None:
    await ctx.send_message(document)


@executor(id="word_count_processor")
async def word_count_processor(document: DocumentInput, ctx: WorkflowContext[ProcessorResult]) -> None:
    text = document.content
    words, digits = len(text.split()), any(c.isdigit() for c in text)
    await ctx.send_message(ProcessorResult("word_count", document.document_id, text, words, len(text), digits))


@executor(id="format_analyzer_processor")
async def format_analyzer_processor(document: DocumentInput, ctx: WorkflowContext[ProcessorResult]) -> None:
    lines = document.content.splitlines()
    chars, sentences = sum(len(line) for line in lines), "." in document.content
    result = ProcessorResult("format_analyzer", document.document_id, document.content, len(lines), chars, sentences)
    await ctx.send_message(result)


@executor(id="aggregator")
async def aggregator(results: list[ProcessorResult], ctx: WorkflowContext[AggregatedResults]) -> None:
    ordered = sorted(results, key=lambda result: result.processor_name)
    await ctx.send_message(AggregatedResults(ordered[0].document_id, ordered[0].content, ordered))


@executor(id="prepare_for_agents")
async def prepare_for_agents(aggregated: AggregatedResults, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(aggregated.content)


@executor(id="prepare_for_mixed")
async def prepare_for_mixed(responses: list[AgentExecutorResponse], ctx: WorkflowContext[str]) -> None:
    by_agent = {response.executor_id: response.agent_response.text for response in responses}
    await ctx.send_message(
        f"Sentiment Analysis: {by_agent['SentimentAnalysisAgent']}\n\n"
        f"Keyword Extraction: {by_agent['KeywordExtractionAgent']}"
    )


@executor(id="statistics_processor")
async def statistics_processor(text: str, ctx: WorkflowContext[ProcessorResult]) -> None:
    digits = any(c.isdigit() for c in text)
    await ctx.send_message(ProcessorResult("statistics", "", text, len(text.split()), len(text), digits))


class FinalReportExecutor(Executor):
    @handler
    async def report(
        self, results: list[AgentExecutorResponse | ProcessorResult], ctx: WorkflowContext[Never, str]
    ) -> None:
        lines = ["=== Document Analysis Report ==="]
        for result in results:
            if isinstance(result, AgentExecutorResponse):
                lines += [f"\n--- {result.executor_id} ---", result.agent_response.text]
            else:
                lines += [
                    f"\n--- Processor: {result.processor_name} ---",
                    f"Words: {result.word_count}, Chars: {result.char_count}",
                ]
        await ctx.yield_output("\n".join(lines))


def parallel_app() -> AgentFunctionApp:
    client = OfflineChatClient()
    sentiment = structured_agent(client, "You judge the tone of a text.", "SentimentAnalysisAgent", SentimentResult)
    keywords = structured_agent(client, "You list a text's keywords.", "KeywordExtractionAgent", KeywordResult)
    summary = structured_agent(client, "You summarize analyses.", "SummaryAgent", SummaryResult)
    final_report = FinalReportExecutor(id="final_report")
    workflow = (
        WorkflowBuilder(name="parallel_review", start_executor=input_router)
        .add_fan_out_edges(input_router, [word_count_processor, format_analyzer_processor])
        .add_fan_in_edges([word_count_processor, format_analyzer_processor], aggregator)
        .add_edge(aggregator, prepare_for_agents)
        .add_fan_out_edges(prepare_for_agents, [sentiment, keywords])
        .add_fan_in_edges([sentiment, keywords], prepare_for_mixed)
        .add_fan_out_edges(prepare_for_mixed, [summary, statistics_processor])
        .add_fan_in_edges([summary, statistics_processor], final_report)
        .build()
    )
    return AgentFunctionApp(workflow=workflow, enable_health_check=True)


# 12 workflow_hitl ---------------------------------------------------------------------------------------------------

# The respond URLs the notify executor built, as it would mail them to the reviewer.
NOTIFIED_URLS: list[str] = []


@dataclass
class ContentSubmission:
    content_id: str
    title: str
    body: str
    author: str


class ContentAnalysisResult(BaseModel):
    is_appropriate: bool
    risk_level: Literal["low", "medium", "high"]
    concerns: list[str]
    recommendation: str


@dataclass
class AnalysisWithSubmission:
    submission: ContentSubmission
    analysis: dict[str, Any]


@dataclass
class HumanApprovalRequest:
    content_id: str
    title: str
    body: str
    author: str
    ai_analysis: dict[str, Any]
    prompt: str


class HumanApprovalResponse(BaseModel):
    approved: bool
    reviewer_notes: str = ""


@dataclass
class HumanReviewNotification:
    request_id: str
    content_id: str
    prompt: str


@dataclass
class ModerationResult:
    content_id: str
    status: str
    ai_analysis: dict[str, Any]
    reviewer_notes: str


class InputRouterExecutor(Executor):
    @handler
    async def route(self, submission: ContentSubmission, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
        ctx.set_state("current_submission", submission)
        prompt = (
            f"Please analyze this submission. Title: {submission.title}. Author: {submission.author}. "
            f"Content: {submission.body}"
        )
        await ctx.send_message(AgentExecutorRequest(messages=[Message("user", [prompt])], should_respond=True))


class ContentAnalyzerExecutor(Executor):
    @handler
    async def analyze(self, response: AgentExecutorResponse, ctx: WorkflowContext[AnalysisWithSubmission]) -> None:
        try:
            analysis = ContentAnalysisResult.model_validate_json(response.agent_response.text).model_dump()
        except ValidationError:
            analysis = {
                "is_appropriate": False,
                "risk_level": "high",
                "concerns": [],
                "recommendation": "Manual review required",
            }
        await ctx.send_message(AnalysisWithSubmission(ctx.get_state("current_submission"), analysis))


class HumanReviewExecutor(Executor):
    @handler
    async def ask(self, item: AnalysisWithSubmission, ctx: WorkflowContext[HumanReviewNotification]) -> None:
        submission = item.submission
        prompt = (
            f"Approve '{submission.title}' by {submission.author}? The AI recommends: {item.analysis['recommendation']}"
        )
        request = HumanApprovalRequest(
            submission.content_id, submission.title, submission.body, submission.author, item.analysis, prompt
        )
        ctx.set_state("pending_analysis", item.analysis)
        await ctx.request_info(request_data=request, response_type=HumanApprovalResponse)
        request_id = await WorkflowHitlContext.pending_request_id(ctx)
        assert request_id is not None
        notification = HumanReviewNotification(request_id, submission.content_id, prompt)
        await ctx.send_message(notification, target_id="notify_executor")

    @response_handler
    async def handle_approval_response(
        self,
        original_request: HumanApprovalRequest,
        response: HumanApprovalResponse,
        ctx: WorkflowContext[ModerationResult],
    ) -> None:
        status = "approved" if response.approved else "rejected"
        result = ModerationResult(
            original_request.content_id, status, original_request.ai_analysis, response.reviewer_notes
        )
        await ctx.send_message(result, target_id="publish_executor")


class NotifyExecutor(Executor):
    @handler
    async def notify(self, notification: HumanReviewNotification, ctx: WorkflowContext) -> None:
        hitl = WorkflowHitlContext.from_context(ctx)
        if hitl is None:
            logger.info("Not on a durable host: no reviewer to notify about %s.", notification.content_id)
            return
        try:
            url = hitl.build_respond_url(notification.request_id)
        except RuntimeError as exc:
            logger.warning("No respond URL for %s: %s", notification.content_id, exc)
            return
        NOTIFIED_URLS.append(url)


class PublishExecutor(Executor):
    @handler
    async def publish(self, result: ModerationResult, ctx: WorkflowContext[Never, str]) -> None:
        notes = result.reviewer_notes or "None"
        if result.status == "approved":
            await ctx.yield_output(
                f"✅ Content '{result.content_id}' has been APPROVED and published.\nReviewer notes: {notes}"
            )
        else:
            await ctx.yield_output(f"❌ Content '{result.content_id}' has been REJECTED.\nReviewer notes: {notes}")


def hitl_app() -> AgentFunctionApp:
    analyzer = structured_agent(
        OfflineChatClient(), "You review content for a community site.", "ContentAnalyzerAgent", ContentAnalysisResult
    )
    router = InputRouterExecutor(id="input_router")
    analysis = ContentAnalyzerExecutor(id="content_analyzer_executor")
    review = HumanReviewExecutor(id="human_review_executor")
    notify = NotifyExecutor(id="notify_executor")
    publish = PublishExecutor(id="publish_executor")
    workflow = (
        WorkflowBuilder(name="content_moderation", start_executor=router)
        .add_edge(router, analyzer)
        .add_edge(analyzer, analysis)
        .add_edge(analysis, review)
        .add_edge(review, notify)
        .add_edge(review, publish)
        .build()
    )
    return AgentFunctionApp(workflow=workflow, enable_health_check=True)
