"""agent-host: run Microsoft Agent Framework agents as durable conversations on Azure Durable Functions."""

from . import _python_version  # noqa: F401  (first: refuses an old Python before any newer syntax is read)
from ._app import AgentFunctionApp
from ._clock import Clock, SystemClock
from ._conversation.checkpoints import safe_to_repeat
from ._conversation.history import DurableHistoryProvider
from ._errors import (
    AgentHostError,
    AgentNotFoundError,
    ApprovalAnsweredError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    InvalidRequestError,
    MessageTooLargeError,
    MethodNotAllowedError,
    RequestAnsweredError,
    RequestNotFoundError,
    RunNotFoundError,
    StateCapacityExceededError,
    StateCorruptError,
    StateVersionError,
    StorageUnavailableError,
    TurnExpiredError,
    TurnFailedError,
    TurnNotFoundError,
    UnknownApprovalError,
    UnsupportedMediaTypeError,
    WorkflowNotFoundError,
)
from ._offline import OfflineChatClient
from ._orchestrations.errors import AgentTurnError, StructuredOutputError
from ._retention_settings import RetentionSettings
from ._settings import HostSettings, chat_client_from_settings
from ._streaming.callbacks import AgentCallbackContext, AgentResponseCallbackProtocol
from ._streaming.channel import StreamEvent, TurnStreamStore
from ._streaming.store_errors import StreamStoreNotConfiguredError, StreamStoreUnavailableError
from ._workflows.hitl_context import WorkflowHitlContext
from ._workflows.registration import WorkflowRetryPolicy

# The package ships inside the function app's folder rather than installed, so the version is written here; a test
# keeps it equal to pyproject.toml's.
__version__ = "0.1.0"

__all__ = [
    "AgentCallbackContext",
    "AgentFunctionApp",
    "AgentHostError",
    "AgentNotFoundError",
    "AgentResponseCallbackProtocol",
    "AgentTurnError",
    "ApprovalAnsweredError",
    "Clock",
    "ConversationNotFoundError",
    "DurableHistoryProvider",
    "HostSettings",
    "IdempotencyConflictError",
    "InvalidRequestError",
    "MessageTooLargeError",
    "MethodNotAllowedError",
    "OfflineChatClient",
    "RequestAnsweredError",
    "RequestNotFoundError",
    "RetentionSettings",
    "RunNotFoundError",
    "StateCapacityExceededError",
    "StateCorruptError",
    "StateVersionError",
    "StorageUnavailableError",
    "StreamEvent",
    "StreamStoreNotConfiguredError",
    "StreamStoreUnavailableError",
    "StructuredOutputError",
    "SystemClock",
    "TurnExpiredError",
    "TurnFailedError",
    "TurnNotFoundError",
    "TurnStreamStore",
    "UnknownApprovalError",
    "UnsupportedMediaTypeError",
    "WorkflowHitlContext",
    "WorkflowNotFoundError",
    "WorkflowRetryPolicy",
    "chat_client_from_settings",
    "safe_to_repeat",
]
