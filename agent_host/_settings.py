"""Settings the host reads (once, when the app is built), and the choice of chat client from them.

Client precedence, in one ordered place: Azure OpenAI when its endpoint is set, then OpenAI or any
OpenAI-compatible endpoint, then the offline model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ._contract import describe_problems
from ._expiry_settings import DEFAULT_CONVERSATION_TTL_SECONDS, ttl_from_setting, ttl_seconds_of
from ._offline import OfflineChatClient
from ._retention_settings import RetentionChange, RetentionSettings

AZURE_OPENAI_ENDPOINT = "AZURE_OPENAI_ENDPOINT"
AZURE_OPENAI_CHAT_MODEL = "AZURE_OPENAI_CHAT_MODEL"
AZURE_OPENAI_API_KEY = "AZURE_OPENAI_API_KEY"
OPENAI_API_KEY = "OPENAI_API_KEY"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OPENAI_CHAT_MODEL = "OPENAI_CHAT_MODEL"
RETENTION_MODE_SETTING = "AGENT_HOST_RETENTION_MODE"
MAX_STATE_BYTES_SETTING = "AGENT_HOST_MAX_STATE_BYTES"
CONVERSATION_TTL_SETTING = "AGENT_HOST_CONVERSATION_TTL"
TURN_ERROR_DETAILS_SETTING = "AGENT_HOST_TURN_ERROR_DETAILS"
CHECKPOINTS_SETTING = "AGENT_HOST_CHECKPOINTS"
SWITCH_ON = frozenset({"1", "true", "yes", "on"})
SWITCH_OFF = frozenset({"", "0", "false", "no", "off"})
STATE_CACHE_SETTING = "AGENT_HOST_STATE_CACHE_MB"
# Named by the scheduler variant of host.json (infra/hooks/durable_backend.py) and written by the deployment.
SCHEDULER_CONNECTION_SETTING = "DURABLE_TASK_SCHEDULER_CONNECTION_STRING"
DEFAULT_STATE_CACHE_MB = 128


@dataclass(frozen=True)
class HostSettings:
    """Limits and defaults of the host, from app settings (environment variables).

    Attributes:
        max_message_bytes: Largest accepted message (UTF-8 bytes). `AGENT_HOST_MAX_MESSAGE_BYTES`.
        default_wait_seconds: How long a turn request waits for its answer by default. `AGENT_HOST_WAIT_SECONDS`.
        max_wait_seconds: The longest wait a request may ask for. `AGENT_HOST_MAX_WAIT_SECONDS`.
        run_timeout_seconds: How long one agent run may take before the turn fails. `AGENT_HOST_RUN_TIMEOUT_SECONDS`.
        max_turn_records: Turn results kept per conversation for callers. `AGENT_HOST_MAX_TURN_RECORDS`.
        turn_record_ttl_seconds: How long a turn result stays readable. `AGENT_HOST_TURN_RECORD_TTL_SECONDS`.
        retention: Default retention of new conversations: `AGENT_HOST_RETENTION_MODE`,
            `AGENT_HOST_MAX_STATE_BYTES`.
        conversation_ttl_seconds: How long a conversation may go without a turn or a retention change before it
            is deleted; 0 never. `AGENT_HOST_CONVERSATION_TTL` (docs/retention.md, "Idle conversations expire").
        turn_error_details: A failed turn's error says why it failed (the exception's kind and text, without
            secrets), not just its type. `AGENT_HOST_TURN_ERROR_DETAILS`: on under `serve`, off unless set elsewhere.
        checkpoints: Journal each model response and tool result of a running turn in the turn stream store, so a
            re-run after a crash repeats at most the step in flight (docs/exactly-once.md). `AGENT_HOST_CHECKPOINTS`:
            on unless set to 0; `add_agent(checkpoints=...)` per agent.
        durable_task_scheduler: Whether the app runs on the Durable Task Scheduler, which caps entity ids at 100
            characters: `DURABLE_TASK_SCHEDULER_CONNECTION_STRING` is set (the deployment writes it for that backend
            only; docs/scaling.md, "Instance ids").
        state_cache_mb: Memory the process may spend, estimated, keeping decoded conversations for their next turn;
            0 keeps none. One bound per process: the app built last sets it. `AGENT_HOST_STATE_CACHE_MB`
            (docs/scaling.md, "Memory").
    """

    max_message_bytes: int = 32 * 1024
    default_wait_seconds: float = 30.0
    max_wait_seconds: float = 120.0
    run_timeout_seconds: float = 230.0
    max_turn_records: int = 100
    turn_record_ttl_seconds: float = 24 * 60 * 60.0
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    conversation_ttl_seconds: float = DEFAULT_CONVERSATION_TTL_SECONDS
    turn_error_details: bool = False
    checkpoints: bool = True
    durable_task_scheduler: bool = False
    state_cache_mb: int = DEFAULT_STATE_CACHE_MB

    def __post_init__(self) -> None:
        # Checked here too, so a value given in code fails at startup as a setting does.
        ttl_seconds_of(self.conversation_ttl_seconds, "HostSettings(conversation_ttl_seconds)")
        if type(self.state_cache_mb) is not int or self.state_cache_mb < 0:
            raise ValueError(
                f"HostSettings(state_cache_mb={self.state_cache_mb!r}) must be a whole number of megabytes, 0 or more."
            )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> HostSettings:
        """Read every `AGENT_HOST_*` setting; unset ones keep their defaults.

        Raises:
            ValueError: a setting is present but not a valid value; the message names it.
        """
        env = os.environ if environ is None else environ
        defaults = cls()
        retention = retention_from(
            defaults.retention,
            {"mode": env.get(RETENTION_MODE_SETTING), "max_state_bytes": _whole(env, MAX_STATE_BYTES_SETTING)},
            names={"mode": RETENTION_MODE_SETTING, "max_state_bytes": MAX_STATE_BYTES_SETTING},
            source="App setting",
        )
        return cls(
            max_message_bytes=_number(env, "AGENT_HOST_MAX_MESSAGE_BYTES", defaults.max_message_bytes, int),
            default_wait_seconds=_number(env, "AGENT_HOST_WAIT_SECONDS", defaults.default_wait_seconds, float),
            max_wait_seconds=_number(env, "AGENT_HOST_MAX_WAIT_SECONDS", defaults.max_wait_seconds, float),
            run_timeout_seconds=_number(env, "AGENT_HOST_RUN_TIMEOUT_SECONDS", defaults.run_timeout_seconds, float),
            max_turn_records=_number(env, "AGENT_HOST_MAX_TURN_RECORDS", defaults.max_turn_records, int),
            turn_record_ttl_seconds=_number(
                env, "AGENT_HOST_TURN_RECORD_TTL_SECONDS", defaults.turn_record_ttl_seconds, float
            ),
            retention=retention,
            conversation_ttl_seconds=_ttl(env, CONVERSATION_TTL_SETTING, defaults.conversation_ttl_seconds),
            turn_error_details=switch_setting(
                env, TURN_ERROR_DETAILS_SETTING, "to say in a failed turn's error why it failed", "to say its type only"
            ),
            # On unless switched off: unlike the other switches, unset means on.
            checkpoints=not env.get(CHECKPOINTS_SETTING)
            or switch_setting(env, CHECKPOINTS_SETTING, "to checkpoint each step of a turn", "to run turns whole"),
            durable_task_scheduler=bool(env.get(SCHEDULER_CONNECTION_SETTING)),
            state_cache_mb=_megabytes(env, STATE_CACHE_SETTING, defaults.state_cache_mb),
        )


def retention_from(
    defaults: RetentionSettings, overrides: Mapping[str, Any], *, names: Mapping[str, str], source: str
) -> RetentionSettings:
    """`defaults` with the given (not None) overrides, validated by the one retention model.

    Raises:
        ValueError: naming each invalid value by the name the caller set it under (`names`).
    """
    changes = {key: value for key, value in overrides.items() if value is not None}
    # A budget set here is checked against the ceiling; defaults given in code as `RetentionSettings` are not.
    model = RetentionChange if "max_state_bytes" in changes else RetentionSettings
    try:
        return RetentionSettings.model_validate(model.model_validate({**defaults.model_dump(), **changes}).model_dump())
    except ValidationError as exc:
        raise ValueError(f"{source} {describe_problems(exc, names)}.") from None


def switch_setting(env: Mapping[str, str], name: str, on: str, off: str) -> bool:
    """A setting that turns something on or off; unset or empty is off.

    Args:
        env: The settings.
        name: The setting.
        on: What `1` does, for the message ("to serve the inspector page").
        off: What `0` or nothing does.

    Raises:
        ValueError: the value is neither on (`1`, `true`, `yes`, `on`) nor off (`0`, `false`, `no`, `off`, empty).
    """
    raw = env.get(name) or ""
    value = raw.strip().lower()
    if value in SWITCH_ON:
        return True
    if value in SWITCH_OFF:
        return False
    raise ValueError(f"Setting {name}={raw!r} is not a switch: set 1 {on}, 0 or nothing {off}.")


def turn_switch_on_unless_set(environ: MutableMapping[str, str], name: str) -> None:
    """Turn a switch setting on in `environ` unless it is set already (how `serve` picks its local defaults)."""
    if not environ.get(name):
        environ[name] = "1"


def _whole(env: Mapping[str, str], name: str) -> int | str | None:
    """A setting that should be a whole number, as one when it reads as one (else as given, for validation)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        return raw


def _ttl(env: Mapping[str, str], name: str, default: float) -> float:
    """A duration setting (`14d`, `3600`, `0` for off); unset or empty keeps `default`."""
    raw = env.get(name)
    return default if raw is None or raw == "" else ttl_from_setting(raw, name)


def _megabytes(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number of megabytes, 0 allowed; unset or empty keeps `default`."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not raw.strip().isdigit():
        raise ValueError(f"Setting {name}={raw!r} is not a whole number of megabytes; set 0 or more (0: none).")
    return int(raw)


def _number(env: Mapping[str, str], name: str, default: Any, kind: type) -> Any:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"Setting {name}={raw!r} is not a {kind.__name__}; set a positive number.") from None
    if value <= 0:
        raise ValueError(f"Setting {name}={raw!r} must be positive.")
    return value


def chat_client_from_settings(environ: Mapping[str, str] | None = None) -> Any:
    """The chat client the settings ask for: Azure OpenAI, then OpenAI-compatible, then the offline model.

    Azure OpenAI (`AZURE_OPENAI_ENDPOINT`, `AZURE_OPENAI_CHAT_MODEL`) signs in with Entra ID
    (`DefaultAzureCredential`, e.g. a managed identity) unless `AZURE_OPENAI_API_KEY` is set. OpenAI or a
    compatible server such as Ollama (`OPENAI_API_KEY` and/or `OPENAI_BASE_URL`, `OPENAI_CHAT_MODEL`) uses
    the Chat Completions API. With none of these, the offline model answers.

    Raises:
        ValueError: a model endpoint is configured but its model setting is not.
    """
    env = os.environ if environ is None else environ
    if env.get(AZURE_OPENAI_ENDPOINT):
        from agent_framework_openai import OpenAIChatClient

        deployment = _model(
            env,
            AZURE_OPENAI_ENDPOINT,
            "Azure OpenAI",
            AZURE_OPENAI_CHAT_MODEL,
            "its deployment name (chat after azd up)",
        )
        if env.get(AZURE_OPENAI_API_KEY):
            return OpenAIChatClient(
                azure_endpoint=env[AZURE_OPENAI_ENDPOINT],
                model=deployment,
                api_key=env[AZURE_OPENAI_API_KEY],
            )
        from azure.identity import DefaultAzureCredential

        return OpenAIChatClient(
            azure_endpoint=env[AZURE_OPENAI_ENDPOINT],
            model=deployment,
            credential=DefaultAzureCredential(),
        )
    if env.get(OPENAI_API_KEY) or env.get(OPENAI_BASE_URL):
        from agent_framework_openai import OpenAIChatCompletionClient

        chosen_by = OPENAI_API_KEY if env.get(OPENAI_API_KEY) else OPENAI_BASE_URL
        model = _model(
            env,
            chosen_by,
            "an OpenAI-compatible model",
            OPENAI_CHAT_MODEL,
            "its name (gpt-4o-mini, llama3.2 on Ollama)",
        )
        return OpenAIChatCompletionClient(
            model=model,
            api_key=env.get(OPENAI_API_KEY) or "not-needed",
            base_url=env.get(OPENAI_BASE_URL) or None,
        )
    return OfflineChatClient()


def _model(env: Mapping[str, str], chosen_by: str, service: str, name: str, what: str) -> str:
    """The model setting `name`, which the service `chosen_by` chose needs.

    Raises:
        ValueError: naming the setting, as the docs do (core's own message names its own settings).
    """
    model = (env.get(name) or "").strip()
    if not model:
        raise ValueError(f"{chosen_by} is set, so {service} answers, but {name} is not: set {name} to {what}.")
    return model


def describe_chat_client(client: Any) -> str:
    """One line saying which model answers, for the local host's banner and the logs."""
    if isinstance(client, OfflineChatClient):
        return "offline model (deterministic, no network; set AZURE_OPENAI_ENDPOINT or OPENAI_* to use a real one)"
    model = getattr(client, "model", None) or getattr(client, "model_id", None) or "default model"
    return f"{type(client).__name__} ({model})"
