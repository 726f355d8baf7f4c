"""The public API is small and pinned: `__all__` is exactly the package's public names, errors included."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path

import agent_host
from agent_host._errors import public_error_classes


def test_all_lists_exactly_the_names_the_package_makes_public() -> None:
    # As httpx pins it: a name imported into the package but left out of __all__ (or the reverse) fails here. The
    # package loads most names on first use, so what it offers is what dir() lists, not what it has loaded so far.
    public = {
        name
        for name in dir(agent_host)
        if not name.startswith("_") and not isinstance(getattr(agent_host, name), types.ModuleType)
    }

    assert sorted(agent_host.__all__) == sorted(public)


def test_every_error_a_caller_can_meet_is_exported() -> None:
    errors = public_error_classes()

    assert set(errors) <= set(agent_host.__all__)
    assert all(getattr(agent_host, name) is cls for name, cls in errors.items())


def test_public_api_is_exactly_this() -> None:
    assert sorted(agent_host.__all__) == [
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


def test_the_version_is_the_projects() -> None:
    # The package ships inside the function app's folder, not installed: its version is written in the package.
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())

    assert agent_host.__version__ == project["project"]["version"]
