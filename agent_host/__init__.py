"""agent-host: run Microsoft Agent Framework agents as durable conversations on Azure Durable Functions."""

import importlib
import typing

from . import _python_version  # noqa: F401  (first: refuses an old Python before any newer syntax is read)
from ._clock import Clock, SystemClock
from ._errors import (
    AgentHostError,
    AgentNotFoundError,
    ApprovalAnsweredError,
    ApprovalExpiredError,
    BusyRuleUnavailableError,
    CancelNotRecordedError,
    ConversationBusyError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    InvalidRequestError,
    MessageTooLargeError,
    MethodNotAllowedError,
    RequestAnsweredError,
    RequestNotFoundError,
    ResponseNotFoundError,
    RunNotFoundError,
    StateCapacityExceededError,
    StateCorruptError,
    StateVersionError,
    StorageUnavailableError,
    TurnExpiredError,
    TurnFailedError,
    TurnFinishedError,
    TurnNotFoundError,
    UnauthenticatedError,
    UnknownApprovalError,
    UnsupportedMediaTypeError,
    WorkflowNotFoundError,
)
from ._orchestrations.errors import AgentTurnError, StructuredOutputError
from ._streaming.channel import StreamEvent, TurnStreamStore
from ._streaming.store_errors import StreamStoreNotConfiguredError, StreamStoreUnavailableError

if typing.TYPE_CHECKING:
    from ._app import AgentFunctionApp
    from ._conversation.checkpoints import safe_to_repeat
    from ._conversation.history import DurableHistoryProvider
    from ._offline import OfflineChatClient
    from ._retention_settings import RetentionSettings
    from ._settings import HostSettings, chat_client_from_settings
    from ._streaming.callbacks import AgentCallbackContext, AgentResponseCallbackProtocol
    from ._workflows.hitl_context import WorkflowHitlContext
    from ._workflows.registration import WorkflowRetryPolicy

# Loaded on first use: these pull in agent-framework-core, pydantic or (the app) azure.functions and every layer, which
# a module of the package imported on its own (the conversation entity, say) or `import agent_host` should not pay for.
_LAZY: dict[str, str] = {
    "AgentCallbackContext": "._streaming.callbacks",
    "AgentFunctionApp": "._app",
    "AgentResponseCallbackProtocol": "._streaming.callbacks",
    "DurableHistoryProvider": "._conversation.history",
    "HostSettings": "._settings",
    "OfflineChatClient": "._offline",
    "RetentionSettings": "._retention_settings",
    "WorkflowHitlContext": "._workflows.hitl_context",
    "WorkflowRetryPolicy": "._workflows.registration",
    "chat_client_from_settings": "._settings",
    "safe_to_repeat": "._conversation.checkpoints",
}


def __getattr__(name: str) -> typing.Any:
    """A public name not loaded yet: import its module, then keep the name here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """What the package offers, loaded or not."""
    return sorted({*globals(), *_LAZY})


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
    "ApprovalExpiredError",
    "BusyRuleUnavailableError",
    "CancelNotRecordedError",
    "Clock",
    "ConversationBusyError",
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
    "ResponseNotFoundError",
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
    "TurnFinishedError",
    "TurnNotFoundError",
    "TurnStreamStore",
    "UnauthenticatedError",
    "UnknownApprovalError",
    "UnsupportedMediaTypeError",
    "WorkflowHitlContext",
    "WorkflowNotFoundError",
    "WorkflowRetryPolicy",
    "chat_client_from_settings",
    "safe_to_repeat",
]
