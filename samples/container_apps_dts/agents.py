"""The sample's app module: the agent `python -m agent_host worker --app agents:agent` hosts in the container.

No Functions here: the worker registers the agent's conversation entity on the Durable Task Scheduler and serves its
HTTP API. With `AZURE_OPENAI_ENDPOINT` and `AZURE_OPENAI_CHAT_MODEL` set (main.bicep sets both) Azure OpenAI answers,
signed in as the container app's managed identity; with neither, the offline model does.
"""

from __future__ import annotations

from agent_framework import Agent

from agent_host import chat_client_from_settings

# The conversation lives in the durable entity, not in the model service (the Responses API stores by default).
agent = Agent(
    chat_client_from_settings(),
    "You are a helpful assistant. Remember what the user tells you.",
    name="assistant",
    default_options={"store": False},
)
