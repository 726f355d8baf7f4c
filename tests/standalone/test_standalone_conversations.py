"""The conversation entity on a durabletask worker, through AgentClient, against the in-memory backend: recall,
restarts, exactly-once turns, the HTTP routes' errors, orchestrations calling the entity, and the published shape."""

from __future__ import annotations

import json

import pytest
from agent_framework import Agent
from apps import make_agent
from chat_clients import FailingChatClient, ScriptedChatClient
from durabletask import task
from durabletask.client import TaskHubGrpcClient
from durabletask.entities import EntityInstanceId
from durabletask.worker import TaskHubGrpcWorker

from agent_host import (
    AgentNotFoundError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    InvalidRequestError,
    MessageTooLargeError,
    TurnFailedError,
)
from agent_host._conversation.state_cache import CONVERSATION_CACHE
from agent_host.worker import AgentWorker, worker_options

from .workers import agent_client, running_worker


def sent_texts(client: ScriptedChatClient, call: int) -> list[str]:
    return [message.text for message in client.calls[call]]


def test_second_turn_recalls_the_first(hub: str) -> None:
    model = ScriptedChatClient()

    with running_worker(hub, [make_agent(model)]), agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        first = conversation.send("My name is Ada.")
        second = conversation.send("What is my name?")

    assert first["text"] == "reply 1: My name is Ada."
    assert second["text"] == "reply 2: What is my name?"
    assert sent_texts(model, 1)[-3:] == ["My name is Ada.", "reply 1: My name is Ada.", "What is my name?"]


def test_a_restarted_worker_recalls_the_conversation(hub: str) -> None:
    before, after = ScriptedChatClient(), ScriptedChatClient()

    with agent_client(hub) as client:
        with running_worker(hub, [make_agent(before)]):
            client.conversation("assistant", "c1").send("My name is Ada.")
        CONVERSATION_CACHE.clear()  # a new process decodes the stored text afresh
        with running_worker(hub, [make_agent(after)]):
            answer = client.conversation("assistant", "c1").send("What is my name?")

    assert answer["status"] == "completed"
    assert "My name is Ada." in sent_texts(after, 0)
    assert len(before.calls) == len(after.calls) == 1


def test_a_redelivered_run_operation_runs_the_model_once(hub: str) -> None:
    model = ScriptedChatClient()
    raw = TaskHubGrpcClient(host_address=hub)
    operation = {"turnId": "0000000000a1234abcd", "message": "Hello"}

    with running_worker(hub, [make_agent(model)]), agent_client(hub) as client:
        raw.signal_entity(EntityInstanceId("conversation_assistant", "c1"), "run", operation)
        raw.signal_entity(EntityInstanceId("conversation_assistant", "c1"), "run", operation)
        later = client.conversation("assistant", "c1").send("After")
        turn = client.conversation("assistant", "c1").turn(operation["turnId"])
    raw.close()

    assert later["text"] == "reply 2: After"
    assert turn["text"] == "reply 1: Hello"
    assert len(model.calls) == 2


def test_a_retried_send_with_its_idempotency_key_runs_the_model_once(hub: str) -> None:
    model = ScriptedChatClient()

    with running_worker(hub, [make_agent(model)]), agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        first = conversation.send("Book it", idempotency_key="order-7")
        retry = conversation.send("Book it", idempotency_key="order-7")
        with pytest.raises(IdempotencyConflictError) as conflict:
            conversation.send("Cancel it", idempotency_key="order-7")

    assert retry == first
    assert len(model.calls) == 1
    assert conflict.value.code == "idempotency_key_reused"


def test_a_send_without_waiting_is_read_back_by_its_turn_id(hub: str) -> None:
    with running_worker(hub, [make_agent(ScriptedChatClient())]), agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        pending = conversation.send("Hello", wait=False)
        settled = conversation.turn(pending["turnId"], timeout_seconds=10)

    assert pending["status"] == "pending"
    assert settled["status"] == "completed" and settled["text"] == "reply 1: Hello"


def test_a_failed_turn_raises_its_recorded_error_and_reads_back_as_failed(hub: str) -> None:
    with running_worker(hub, [make_agent(FailingChatClient())]), agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        with pytest.raises(TurnFailedError) as failed:
            conversation.send("Hello")
        turn = conversation.turn(failed.value.fields["turnId"])

    assert failed.value.code == "turn_failed" and failed.value.status == 502
    assert "secret-detail-123" not in failed.value.message
    assert turn["status"] == "failed" and turn["error"]["code"] == "turn_failed"


def test_requests_the_routes_refuse_are_refused_before_any_signal(hub: str) -> None:
    with agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        with pytest.raises(InvalidRequestError) as missing:
            conversation.send()
        with pytest.raises(MessageTooLargeError):
            conversation.send("x" * (client.settings.max_message_bytes + 1))
        with pytest.raises(InvalidRequestError) as bad_id:
            client.conversation("assistant", "../etc")
        with pytest.raises(InvalidRequestError) as bad_turn:
            conversation.turn("not a turn")

    assert missing.value.code == "missing_message"
    assert bad_id.value.code == "invalid_conversation_id"
    assert bad_turn.value.code == "invalid_turn_id"


def test_read_messages_retention_and_delete_answer_as_the_routes_do(hub: str) -> None:
    with running_worker(hub, [make_agent(ScriptedChatClient())]), agent_client(hub) as client:
        conversation = client.conversation("assistant", "c1")
        with pytest.raises(ConversationNotFoundError):
            conversation.read()
        conversation.send("My name is Ada.")
        summary = conversation.read()
        messages = conversation.messages()
        retention = conversation.set_retention("keep_all", 300_000)
        deleted = conversation.delete()
        with pytest.raises(ConversationNotFoundError) as gone:
            conversation.messages()
        with pytest.raises(ConversationNotFoundError):
            conversation.delete()

    assert summary["messageCount"] == 2 and summary["turnCount"] == 1
    assert [message["text"] for message in messages] == ["My name is Ada.", "reply 1: My name is Ada."]
    assert retention["retention"]["mode"] == "keep_all" and retention["retention"]["maxStateBytes"] == 300_000
    assert deleted is True
    assert "was deleted" in gone.value.message


def test_an_orchestration_calls_the_conversation_entity(hub: str) -> None:
    model = ScriptedChatClient()

    def ask(context: task.OrchestrationContext, question: dict[str, str]) -> object:
        entity = EntityInstanceId("conversation_assistant", question["conversation"])
        operation = {"turnId": question["turnId"], "message": question["message"], "reply": True}
        return (yield context.call_entity(entity, "run", operation))

    with running_worker(hub, [make_agent(model)], orchestrators=[ask]), agent_client(hub) as client:
        client.conversation("assistant", "c1").send("My name is Ada.")
        instance = client.client.schedule_new_orchestration(
            ask, input={"conversation": "c1", "turnId": "0000000000aorch1", "message": "What is my name?"}
        )
        state = client.client.wait_for_orchestration_completion(instance, timeout=30)
        transcript = client.conversation("assistant", "c1").messages()

    assert state is not None and state.serialized_output is not None
    reply = json.loads(state.serialized_output)
    assert reply["status"] == "completed"
    assert [message["text"] for message in reply["messages"]] == ["reply 2: What is my name?"]
    assert "My name is Ada." in sent_texts(model, 1)
    assert [message["text"] for message in transcript][-1] == "reply 2: What is my name?"


def test_the_published_client_shape_runs_turns_in_one_session(hub: str) -> None:
    model = ScriptedChatClient()

    with running_worker(hub, [make_agent(model)]), agent_client(hub) as client:
        agent = client.get_agent("assistant")
        session = agent.create_session()
        agent.run("My name is Ada.", session=session)
        response = agent.run("What is my name?", session=session)
        joined = client.conversation("assistant", session.conversation_id).read()

    assert response.text == "reply 2: What is my name?"
    assert "My name is Ada." in sent_texts(model, 1)
    assert joined["turnCount"] == 2


def test_a_worker_without_the_state_converter_is_refused() -> None:
    with pytest.raises(ValueError, match=r"worker_options\(\)"):
        AgentWorker(TaskHubGrpcWorker(host_address="localhost:1"), [make_agent(ScriptedChatClient())])


def test_an_agent_registered_twice_under_one_name_is_refused() -> None:
    worker = AgentWorker(TaskHubGrpcWorker(host_address="localhost:1", **worker_options()))
    worker.add_agent(make_agent(ScriptedChatClient()))

    with pytest.raises(ValueError, match="registered twice"):
        worker.add_agent(Agent(ScriptedChatClient(), "Other.", name="Assistant"))
    with pytest.raises(ValueError, match="turn_threads"):
        worker_options(turn_threads=0)


def test_a_client_told_the_hosted_agents_refuses_any_other(hub: str) -> None:
    with agent_client(hub, agents=["assistant"]) as client, pytest.raises(AgentNotFoundError) as unknown:
        client.conversation("planner", "c1")

    assert unknown.value.code == "agent_not_found" and "assistant" in unknown.value.message


def test_a_failed_turn_fails_the_orchestrations_task_naming_its_code(hub: str) -> None:
    workers: list[AgentWorker] = []

    def ask(context: task.OrchestrationContext, _: object) -> object:
        agent = workers[0].get_agent(context, "assistant")
        try:
            yield agent.run("Hello")
        except task.TaskFailedError as exc:
            return [exc.details.error_type, str(exc)]
        return None

    with running_worker(hub, [make_agent(FailingChatClient())], orchestrators=[ask]) as worker, agent_client(hub) as c:
        workers.append(worker)
        instance = c.client.schedule_new_orchestration(ask)
        state = c.client.wait_for_orchestration_completion(instance, timeout=30)

    assert state is not None and state.serialized_output is not None
    error_type, message = json.loads(state.serialized_output)
    assert error_type.rsplit(".", 1)[-1] == "AgentTurnError" and "(turn_failed)" in message


def test_get_agent_names_the_registered_agents_for_an_unknown_one() -> None:
    worker = AgentWorker(TaskHubGrpcWorker(host_address="localhost:1", **worker_options()))
    worker.add_agent(make_agent(ScriptedChatClient()))

    with pytest.raises(ValueError, match="Registered agents: assistant"):
        worker.get_agent(None, "planner")  # type: ignore[arg-type]
