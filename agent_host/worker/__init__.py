"""The same durable conversations outside Azure Functions: a durabletask worker hosts the conversation entities, and a
client takes turns through the task hub (docs/standalone-worker.md).

Needs `durabletask` (and `durabletask-azuremanaged` for the Durable Task Scheduler); `import agent_host` does not
import this package, so a Functions app never loads them.
"""

from ._asgi import ADMIN_KEY_HEADER, API_KEY_SETTING, ApiKeyAuth, AuthHook, asgi_app
from ._client import AgentClient, ClientAgent, Conversation
from ._orchestration_agent import AgentReplyTask, WorkerOrchestrationAgent
from ._state_converter import AgentStateConverter, StateText
from ._worker import DEFAULT_TURN_THREADS, AgentWorker, worker_options

__all__ = [
    "ADMIN_KEY_HEADER",
    "API_KEY_SETTING",
    "DEFAULT_TURN_THREADS",
    "AgentClient",
    "AgentReplyTask",
    "AgentStateConverter",
    "AgentWorker",
    "ApiKeyAuth",
    "AuthHook",
    "ClientAgent",
    "Conversation",
    "StateText",
    "WorkerOrchestrationAgent",
    "asgi_app",
    "worker_options",
]
