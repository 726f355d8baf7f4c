"""On the Durable Task Scheduler an orchestration joins only conversations whose ids fit the scheduler's entity ids."""

from __future__ import annotations

import pytest
from apps import build_app, make_agent
from test_orchestration_actions import orchestration_context

from agent_host import HostSettings, OfflineChatClient


def test_create_session_refuses_an_id_longer_than_the_scheduler_leaves() -> None:
    app = build_app(make_agent(OfflineChatClient(), name="writer"), settings=HostSettings(durable_task_scheduler=True))
    writer = app.get_agent(orchestration_context(), "writer")

    joined = writer.create_session(session_id="w" * 79)
    with pytest.raises(ValueError, match="takes at most 79 on the Durable Task Scheduler"):
        writer.create_session(session_id="w" * 80)
    assert joined.conversation_id == "w" * 79
    assert len(writer.create_session().conversation_id) == 36  # new_uuid(), which always fits
