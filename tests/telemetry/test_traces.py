"""One trace per turn, read through an in-memory span exporter against the local host: the HTTP request's span, the
entity operation's span (the trace carried across the durable hop in the operation input) and core's own spans."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import pytest
from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    BaseChatClient,
    ChatResponse,
    Executor,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer
from agent_framework.observability import ChatTelemetryLayer
from apps import build_app, driver_for, make_agent
from chat_clients import default_reply
from clocks import ManualClock
from hosting import RunningHost
from local_host.driving import OrchestrationHost
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_host import AgentFunctionApp, HostSettings

BASE = "/api/agents/assistant/conversations"
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


class TracedChatClient(
    FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], ChatTelemetryLayer[Any], BaseChatClient[Any]
):
    """A scripted model with core's telemetry layer, in the order core's own clients stack it: a `chat` span per
    model call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        self.calls += 1
        return ChatResponse(messages=[default_reply(list(messages), self.calls)])


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    # The global tracer provider can be set only once per process, so it is swapped in and out as OpenTelemetry's own
    # test helpers do: other tests keep running without one, and their operation inputs carry no trace context.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", PROVIDER)
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def named(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name.startswith(prefix)]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def only(found: list[ReadableSpan]) -> ReadableSpan:
    assert len(found) == 1, [span.name for span in found]
    return found[0]


def tool_agent_host(tmp_path: Path, client: TracedChatClient) -> RunningHost:
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return RunningHost(lambda: build_app(make_agent(client, tools=[weather])), tmp_path)


def test_a_turn_is_one_trace_from_the_http_request_through_the_entity_operation_to_the_model_and_tool_calls(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    running = tool_agent_host(tmp_path, TracedChatClient())
    try:
        reply = running.request("POST", f"{BASE}/c1/turns", {"message": 'call weather {"city": "Oslo"}'})
    finally:
        running.stop()
    finished = spans.get_finished_spans()

    assert reply.status == 200, reply.body
    assert reply.json()["messages"][-1]["text"] == "tool said sunny in Oslo"
    http = only(named(finished, "POST /api/agents/{agent}/conversations/{conversationId}/turns"))
    operation = only(named(finished, "run conversation_assistant"))
    invoke = only(named(finished, "invoke_agent"))
    chats = named(finished, "chat")
    tool = only(named(finished, "execute_tool weather"))
    assert http.parent is None
    assert http.kind is trace.SpanKind.SERVER
    assert http.attributes is not None and http.attributes["http.response.status_code"] == 200
    assert operation.kind is trace.SpanKind.CONSUMER
    assert operation.attributes is not None and operation.attributes["gen_ai.conversation.id"] == "c1"
    assert operation.attributes["agent_host.turn.id"] == reply.json()["turnId"]
    assert {span.context.trace_id for span in finished} == {http.context.trace_id}
    assert parent_id(operation) == http.context.span_id
    assert parent_id(invoke) == operation.context.span_id
    # The model asks for the tool, the tool runs, the model answers: all three under the agent's run.
    assert [span.name for span in sorted([*chats, tool], key=lambda span: span.start_time or 0)] == [
        "chat unknown",
        "execute_tool weather",
        "chat unknown",
    ]
    assert {parent_id(span) for span in [*chats, tool]} == {invoke.context.span_id}


@pytest.fixture
def traced_host(tmp_path: Path) -> Iterator[RunningHost]:
    running = RunningHost(lambda: build_app(make_agent(TracedChatClient())), tmp_path)
    yield running
    running.stop()


def caller(trace_id: int, span_id: int) -> dict[str, str]:
    return {"traceparent": f"00-{trace_id:032x}-{span_id:016x}-01"}


def test_each_operation_of_a_batch_and_a_redelivered_one_parent_under_their_own_caller(
    spans: InMemorySpanExporter,
) -> None:
    driver = driver_for(build_app(make_agent(TracedChatClient())), "assistant")
    first = {"turnId": "1a0000000000000000a", "message": "one", "traceContext": caller(1, 11)}
    second = {"turnId": "1a0000000000000000b", "message": "two", "traceContext": caller(2, 22)}

    # The host's own span for the invocation, as the worker makes one current on Azure.
    with trace.get_tracer("test").start_as_current_span("invocation") as invocation:
        driver.send(("run", first), ("run", second))
    driver.send(("run", first))  # redelivered: answered from its record, in its caller's trace all the same
    finished = spans.get_finished_spans()

    operations = named(finished, "run conversation_assistant")
    invokes = named(finished, "invoke_agent")
    assert [(span.context.trace_id, parent_id(span)) for span in operations] == [(1, 11), (2, 22), (1, 11)]
    assert [parent_id(span) for span in invokes] == [span.context.span_id for span in operations[:2]]
    assert [[link.context.span_id for link in span.links] for span in operations] == [
        [invocation.get_span_context().span_id]
    ] * 2 + [[]]


def test_two_turns_are_two_traces(spans: InMemorySpanExporter, traced_host: RunningHost) -> None:
    running = traced_host

    running.request("POST", f"{BASE}/c1/turns", {"message": "one"})
    running.request("POST", f"{BASE}/c1/turns", {"message": "two"})
    finished = spans.get_finished_spans()

    operations = named(finished, "run conversation_assistant")
    https = named(finished, "POST ")
    assert len(operations) == 2 and len(https) == 2
    assert len({span.context.trace_id for span in https}) == 2
    assert [parent_id(span) for span in operations] == [span.context.span_id for span in https]


def test_a_turn_continues_the_callers_traceparent(spans: InMemorySpanExporter, traced_host: RunningHost) -> None:
    running = traced_host
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    running.request("POST", f"{BASE}/c1/turns", {"message": "hi"}, headers={"traceparent": caller})
    finished = spans.get_finished_spans()

    http = only(named(finished, "POST "))
    chat = only(named(finished, "chat"))
    assert http.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert parent_id(http) == 0xB7AD6B7169203331
    assert chat.context.trace_id == http.context.trace_id


def test_an_orchestrations_agent_turn_continues_the_starters_trace(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    clock = ManualClock()
    running = OrchestrationHost(lambda: chain_app(clock), tmp_path / "state", clock)
    tracer = trace.get_tracer("test")

    async def start() -> tuple[str, Span]:
        # As a starter function's span would be current when it calls start_new.
        with tracer.start_as_current_span("starter") as span:
            return await running.client().start_new("chain", None, None), span

    try:
        instance_id, starter = running.call(start())
        running.settle()
        output = running.output(instance_id)
    finally:
        running.stop()
    finished = spans.get_finished_spans()

    assert output == ["reply 1: Write a haiku.", "reply 2: Make it sadder."]
    operations = named(finished, "run conversation_writer")
    chats = named(finished, "chat")
    assert len(operations) == 2 and len(chats) == 2
    assert {span.context.trace_id for span in operations + chats} == {starter.get_span_context().trace_id}
    assert [parent_id(span) for span in operations] == [starter.get_span_context().span_id] * 2


class Relay(Executor):
    """Hands its input on unchanged: a non-agent executor, run in the workflow's activity."""

    @handler
    async def relay(self, response: AgentExecutorResponse, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(response.agent_response.text)


def chain_app(clock: ManualClock) -> AgentFunctionApp:
    """An app whose orchestrator `chain` takes two turns of the agent `writer` in one conversation."""
    app = build_app(
        make_agent(TracedChatClient(), name="writer"), settings=HostSettings(conversation_ttl_seconds=0), clock=clock
    )

    @app.orchestration_trigger(context_name="context")
    def chain(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        writer = app.get_agent(context, "writer")
        session = writer.create_session()
        draft = yield writer.run("Write a haiku.", session=session)
        better = yield writer.run("Make it sadder.", session=session)
        return [draft.text, better.text]

    return app


def test_a_workflows_agent_nodes_continue_the_trace_of_the_request_that_started_the_run(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    def app() -> AgentFunctionApp:
        writer = AgentExecutor(Agent(TracedChatClient(), name="writer"), id="writer")
        editor = AgentExecutor(Agent(TracedChatClient(), name="editor"), id="editor")
        relay = Relay(id="relay")
        workflow = WorkflowBuilder(name="pair", start_executor=writer).add_chain([writer, relay, editor]).build()
        return AgentFunctionApp(workflows=[workflow], settings=HostSettings(conversation_ttl_seconds=0))

    running = RunningHost(app, tmp_path)
    try:
        reply = running.request("POST", "/api/workflows/pair/runs", {"input": "Pitch a cafe."})
    finally:
        running.stop()
    finished = spans.get_finished_spans()

    assert reply.status == 200, reply.body
    http = only(named(finished, "POST /api/workflows/{workflow}/runs"))
    operations = named(finished, "run workflow_agent_pair_")
    invokes = named(finished, "invoke_agent")
    assert [span.name for span in operations] == ["run workflow_agent_pair_writer", "run workflow_agent_pair_editor"]
    assert {span.context.trace_id for span in operations + invokes} == {http.context.trace_id}
    assert [parent_id(span) for span in operations] == [http.context.span_id] * 2
    assert sorted(parent_id(span) for span in invokes) == sorted(span.context.span_id for span in operations)
    # Core's own span of the relay's handler, run in the workflow's activity, joins the same trace.
    relay = only(named(finished, "executor.process relay"))
    assert relay.context.trace_id == http.context.trace_id
    assert parent_id(relay) == http.context.span_id
