"""Orchestrations written for agent-framework-azurefunctions run on the local host, across a restart.

`published_style_app.py` differs from such code only in its import. It runs on the real local host with its
orchestration engine, a real durable client and a manual clock; the host is restarted while an orchestration
waits for a person, and the outputs are asserted exactly (the offline model's answers).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import ManualClock
from local_host.driving import OrchestrationHost
from published_style_app import HUMAN_APPROVAL_EVENT, build_published_style_app

OFFLINE = "[offline model]"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def published_style(tmp_path: Path, clock: ManualClock) -> Iterator[OrchestrationHost]:
    running = OrchestrationHost(lambda: build_published_style_app(clock), tmp_path / "state", clock)
    yield running
    running.stop()


def test_single_agent_chaining_keeps_one_conversation(published_style: OrchestrationHost) -> None:
    instance_id = published_style.start_new("single_agent_orchestration")

    output = published_style.output(instance_id)

    initial = (
        f'{OFFLINE} You said: "Write a concise inspirational sentence about learning.". '
        "(0 earlier messages in this conversation.)"
    )
    assert output == (
        f'{OFFLINE} You said: "Improve this further while keeping it under 25 words: {initial}". '
        "(2 earlier messages in this conversation.)"
    )


def test_concurrent_agents_answer_through_task_all(published_style: OrchestrationHost) -> None:
    instance_id = published_style.start_new("multi_agent_concurrent_orchestration", None, "What is temperature?")

    output = published_style.output(instance_id)

    answer = f'{OFFLINE} You said: "What is temperature?". (0 earlier messages in this conversation.)'
    assert output == {"physicist": answer, "chemist": answer}


def test_human_in_the_loop_with_structured_output_survives_a_restart_while_it_waits(
    published_style: OrchestrationHost,
) -> None:
    request = {"topic": "Contoso launch", "approval_timeout_hours": 72}
    instance_id = published_style.start_new("content_generation_hitl_orchestration", None, request)
    waiting = published_style.instance(instance_id)

    published_style.restart()
    published_style.raise_event(instance_id, HUMAN_APPROVAL_EVENT, {"approved": True})

    content = f"{OFFLINE} Write a short article about 'Contoso launch'."
    assert (waiting.status, json.loads(waiting.custom_status or "null")) == ("Running", "Requesting human feedback.")
    assert published_style.output(instance_id) == {"content": content, "published": f"published {content}"}


def test_human_in_the_loop_times_out_on_its_durable_timer(published_style: OrchestrationHost) -> None:
    request = {"topic": "Contoso launch", "approval_timeout_hours": 72}
    instance_id = published_style.start_new("content_generation_hitl_orchestration", None, request)

    published_style.advance(72 * 3600)

    record = published_style.instance(instance_id)
    assert record.status == "Failed"
    assert "Human approval timed out after 72 hour(s)." in (record.output or "")
