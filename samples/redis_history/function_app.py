"""Sample app: an ordinary core agent whose history lives in the user's own Redis, hosted as durable conversations.

The host sees a history provider it does not own and leaves it alone: it keeps turn records and the session in
the conversation entity, and passes the stable session id `{agent}.{conversationId}`, which this provider uses
as the Redis key. Run it from this folder as README.md says (`PYTHONPATH=../.. ../../.venv/bin/python -m agent_host
serve --app function_app:app`, with `REDIS_URL`).
"""

from __future__ import annotations

import os

from agent_framework import Agent
from redis_history_provider import DEFAULT_REDIS_URL, RedisHistoryProvider

from agent_host import AgentFunctionApp, chat_client_from_settings

REDIS_URL = "REDIS_URL"

# Azure OpenAI, OpenAI or an OpenAI-compatible server when configured, otherwise the offline model.
client = chat_client_from_settings()

history = RedisHistoryProvider(os.environ.get(REDIS_URL) or DEFAULT_REDIS_URL)

assistant = Agent(
    client,
    instructions="You are a friendly assistant. Remember what the user tells you.",
    name="assistant",
    context_providers=[history],
    # The conversation lives in Redis, not in the model service (the Responses API stores by default).
    default_options={"store": False},
)

app = AgentFunctionApp(agents=[assistant])
