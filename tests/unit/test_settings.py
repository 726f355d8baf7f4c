"""Settings and the chat-client precedence, one test per rung."""

from __future__ import annotations

import pytest

from agent_host import HostSettings, OfflineChatClient, chat_client_from_settings


def test_azure_openai_endpoint_wins_over_openai() -> None:
    client = chat_client_from_settings(
        {
            "AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com",
            "AZURE_OPENAI_CHAT_MODEL": "gpt-4o-mini",
            "AZURE_OPENAI_API_KEY": "k",
            "OPENAI_API_KEY": "other",
        }
    )

    assert type(client).__name__ == "OpenAIChatClient"


def test_openai_compatible_base_url_is_used_without_azure() -> None:
    client = chat_client_from_settings(
        {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_CHAT_MODEL": "llama3.2"}
    )

    assert type(client).__name__ == "OpenAIChatCompletionClient"
    assert client.model == "llama3.2"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"OPENAI_API_KEY": "sk-test"},
            "OPENAI_API_KEY is set, so an OpenAI-compatible model answers, but OPENAI_CHAT_MODEL is not: set "
            "OPENAI_CHAT_MODEL to its name (gpt-4o-mini, llama3.2 on Ollama).",
        ),
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_CHAT_MODEL": " "},
            "OPENAI_BASE_URL is set, so an OpenAI-compatible model answers, but OPENAI_CHAT_MODEL is not: set "
            "OPENAI_CHAT_MODEL to its name (gpt-4o-mini, llama3.2 on Ollama).",
        ),
        (
            {"AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com", "AZURE_OPENAI_API_KEY": "k"},
            "AZURE_OPENAI_ENDPOINT is set, so Azure OpenAI answers, but AZURE_OPENAI_CHAT_MODEL is not: set "
            "AZURE_OPENAI_CHAT_MODEL to its deployment name (chat after azd up).",
        ),
    ],
)
def test_a_model_endpoint_without_its_model_setting_names_the_setting(environ: dict, message: str) -> None:
    # Core's own error would name OPENAI_CHAT_COMPLETION_MODEL or OPENAI_MODEL, which the docs never mention.
    with pytest.raises(ValueError) as raised:
        chat_client_from_settings(environ)

    assert str(raised.value) == message


def test_offline_model_when_nothing_is_configured() -> None:
    assert isinstance(chat_client_from_settings({"AZURE_OPENAI_ENDPOINT": "", "OPENAI_API_KEY": ""}), OfflineChatClient)


def test_host_settings_read_from_the_environment() -> None:
    settings = HostSettings.from_environment(
        {
            "AGENT_HOST_MAX_MESSAGE_BYTES": "100",
            "AGENT_HOST_RETENTION_MODE": "keep_all",
            "AGENT_HOST_MAX_STATE_BYTES": "5000",
        }
    )

    assert settings.max_message_bytes == 100
    assert settings.retention.mode == "keep_all"
    assert settings.retention.max_state_bytes == 5000


def test_a_default_budget_over_the_ceiling_stops_the_app_naming_the_ceiling() -> None:
    with pytest.raises(ValueError, match=r"AGENT_HOST_MAX_STATE_BYTES: must be at most 983040 \(960 KiB\)"):
        HostSettings.from_environment({"AGENT_HOST_MAX_STATE_BYTES": "1000000000000"})


def test_invalid_setting_names_the_variable() -> None:
    with pytest.raises(ValueError, match="AGENT_HOST_WAIT_SECONDS"):
        HostSettings.from_environment({"AGENT_HOST_WAIT_SECONDS": "soon"})
