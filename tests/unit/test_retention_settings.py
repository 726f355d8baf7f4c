"""One retention model, one rule, at all three entry points: app settings, add_agent and PUT .../retention."""

from __future__ import annotations

from typing import Any

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from pydantic import ValidationError

from agent_host import HostSettings, InvalidRequestError, RetentionSettings
from agent_host._contract import RetentionRequest, parse_model


@pytest.mark.parametrize(("low", "high"), [(0.7, 0.85), (0.1, 1.0), (0.5, 0.51), (0.1, 1)])
def test_valid_watermarks_pass(low: float, high: float) -> None:
    settings = RetentionSettings(low_watermark=low, high_watermark=high)

    assert (settings.low_watermark, settings.high_watermark) == (low, high)


@pytest.mark.parametrize(("low", "high"), [(0.85, 0.7), (0.0, 0.5), (0.5, 0.5), (0.5, 1.01), (-0.1, 0.5)])
def test_invalid_watermarks_are_refused(low: float, high: float) -> None:
    with pytest.raises(ValidationError):
        RetentionSettings(low_watermark=low, high_watermark=high)


def test_a_valid_request_becomes_settings_with_default_watermarks() -> None:
    settings = parse_model(RetentionRequest, {"mode": "follow_compaction", "maxStateBytes": 65536})

    assert settings.stored() == {
        "mode": "follow_compaction",
        "maxStateBytes": 65536,
        "highWatermark": 0.85,
        "lowWatermark": 0.70,
    }


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            {"mode": "forever", "maxStateBytes": 65536},
            "mode: Input should be 'keep_all', 'auto' or 'follow_compaction'",
        ),
        ({"mode": "auto", "maxStateBytes": 10}, "maxStateBytes: Input should be greater than or equal to 4096"),
        ({"mode": "auto", "maxStateBytes": "big"}, "maxStateBytes: Input should be a valid integer"),
        ({"mode": "auto", "maxStateBytes": True}, "maxStateBytes: Input should be a valid integer"),
        ({"mode": "auto", "maxStateBytes": 65536.5}, "maxStateBytes: Input should be a valid integer"),
        ({"mode": "auto", "maxStateBytes": 65536, "lowWatermark": 0.9}, "must be below the high watermark"),
        ({"mode": "auto", "maxStateBytes": 65536, "highWatermark": "high"}, "highWatermark"),
        ({"mode": "auto", "maxStateBytes": 65536, "keep": 3}, "keep: Extra inputs are not permitted"),
    ],
)
def test_an_invalid_request_names_the_field_and_the_rule(body: Any, named: str) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        parse_model(RetentionRequest, body)

    assert raised.value.code == "invalid_retention" and raised.value.status == 400
    assert named in raised.value.message
    assert '"maxStateBytes": integer 4096 to 983040' in raised.value.message  # and shows what to send


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"AGENT_HOST_RETENTION_MODE": "keepall"}, "AGENT_HOST_RETENTION_MODE: Input should be 'keep_all'"),
        ({"AGENT_HOST_MAX_STATE_BYTES": "100"}, "AGENT_HOST_MAX_STATE_BYTES: Input should be greater than or equal"),
        ({"AGENT_HOST_MAX_STATE_BYTES": "1MB"}, "AGENT_HOST_MAX_STATE_BYTES: Input should be a valid integer"),
    ],
)
def test_app_settings_are_held_to_the_same_rule_and_named_by_their_variable(
    environ: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError, match="App setting") as raised:
        HostSettings.from_environment(environ)

    assert named in str(raised.value)


def test_app_settings_within_the_rule_set_the_default_retention() -> None:
    settings = HostSettings.from_environment(
        {"AGENT_HOST_RETENTION_MODE": "keep_all", "AGENT_HOST_MAX_STATE_BYTES": "8192"}
    )

    assert settings.retention == RetentionSettings(mode="keep_all", max_state_bytes=8192)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"max_state_bytes": 100}, "max_state_bytes: Input should be greater than or equal to 4096"),
        ({"retention_mode": "keepall"}, "retention_mode: Input should be 'keep_all', 'auto' or 'follow_compaction'"),
    ],
)
def test_add_agent_is_held_to_the_same_rule_and_names_its_parameter(overrides: dict[str, Any], named: str) -> None:
    app = build_app()

    with pytest.raises(ValueError, match=r"add_agent\('assistant'\)") as raised:
        app.add_agent(make_agent(ScriptedChatClient()), **overrides)

    assert named in str(raised.value)
