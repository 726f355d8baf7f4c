"""agent-host: run Microsoft Agent Framework agents as durable conversations on Azure Durable Functions."""

from ._app import AgentFunctionApp
from ._clock import Clock, SystemClock
from ._conversation.history import DurableHistoryProvider
from ._errors import (
    AgentHostError,
    AgentNotFoundError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    InvalidRequestError,
    MessageTooLargeError,
    MethodNotAllowedError,
    StateCapacityExceededError,
    StateCorruptError,
    StateVersionError,
    StorageUnavailableError,
    TurnExpiredError,
    TurnFailedError,
    TurnNotFoundError,
    UnknownApprovalError,
    UnsupportedMediaTypeError,
)
from ._offline import OfflineChatClient
from ._retention_settings import RetentionSettings
from ._settings import HostSettings, chat_client_from_settings
from ._streaming.callbacks import AgentCallbackContext, AgentResponseCallbackProtocol
from ._streaming.channel import StreamEvent, TurnStreamStore
from ._streaming.store_errors import StreamStoreNotConfiguredError, StreamStoreUnavailableError

__all__ = [
    "AgentCallbackContext",
    "AgentFunctionApp",
    "AgentHostError",
    "AgentNotFoundError",
    "AgentResponseCallbackProtocol",
    "Clock",
    "ConversationNotFoundError",
    "DurableHistoryProvider",
    "HostSettings",
    "IdempotencyConflictError",
    "InvalidRequestError",
    "MessageTooLargeError",
    "MethodNotAllowedError",
    "OfflineChatClient",
    "RetentionSettings",
    "StateCapacityExceededError",
    "StateCorruptError",
    "StateVersionError",
    "StorageUnavailableError",
    "StreamEvent",
    "StreamStoreNotConfiguredError",
    "StreamStoreUnavailableError",
    "SystemClock",
    "TurnExpiredError",
    "TurnFailedError",
    "TurnNotFoundError",
    "TurnStreamStore",
    "UnknownApprovalError",
    "UnsupportedMediaTypeError",
    "chat_client_from_settings",
]
