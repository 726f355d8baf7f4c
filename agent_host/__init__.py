"""agent-host: run Microsoft Agent Framework agents as durable conversations on Azure Durable Functions."""

from ._app import AgentFunctionApp
from ._clock import Clock
from ._conversation.history import DurableHistoryProvider
from ._errors import (
    AgentHostError,
    AgentNotFoundError,
    ConversationNotFoundError,
    InvalidRequestError,
    MessageTooLargeError,
    StateCapacityExceededError,
    StateCorruptError,
    StateVersionError,
    TurnExpiredError,
    TurnFailedError,
    TurnNotFoundError,
)
from ._offline import OfflineChatClient
from ._settings import HostSettings, chat_client_from_settings

__all__ = [
    "AgentFunctionApp",
    "AgentHostError",
    "AgentNotFoundError",
    "Clock",
    "ConversationNotFoundError",
    "DurableHistoryProvider",
    "HostSettings",
    "InvalidRequestError",
    "MessageTooLargeError",
    "OfflineChatClient",
    "StateCapacityExceededError",
    "StateCorruptError",
    "StateVersionError",
    "TurnExpiredError",
    "TurnFailedError",
    "TurnNotFoundError",
    "chat_client_from_settings",
]
