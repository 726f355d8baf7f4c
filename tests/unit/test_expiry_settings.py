"""The conversation TTL: the app setting's format, its default, the code parameters, and the errors naming each."""

from __future__ import annotations

import datetime

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient

from agent_host import HostSettings
from agent_host._expiry_settings import DEFAULT_CONVERSATION_TTL_SECONDS, describe_ttl, ttl_from_setting
from agent_host._settings import CONVERSATION_TTL_SETTING


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("14d", 1_209_600), ("36h", 129_600), ("90m", 5_400), ("600s", 600), ("3600", 3_600), (" 1.5H ", 5_400)],
)
def test_the_setting_reads_seconds_or_a_number_with_a_unit(raw: str, seconds: float) -> None:
    assert ttl_from_setting(raw, CONVERSATION_TTL_SETTING) == seconds


def test_zero_turns_expiry_off() -> None:
    assert ttl_from_setting("0", CONVERSATION_TTL_SETTING) == 0
    assert HostSettings.from_environment({CONVERSATION_TTL_SETTING: "0"}).conversation_ttl_seconds == 0


def test_unset_or_empty_means_fourteen_days() -> None:
    assert DEFAULT_CONVERSATION_TTL_SECONDS == 14 * 24 * 60 * 60
    assert HostSettings.from_environment({}).conversation_ttl_seconds == DEFAULT_CONVERSATION_TTL_SECONDS
    assert HostSettings.from_environment({CONVERSATION_TTL_SETTING: ""}).conversation_ttl_seconds == 1_209_600
    assert HostSettings().conversation_ttl_seconds == 1_209_600


def test_the_setting_is_read_from_the_environment() -> None:
    assert HostSettings.from_environment({CONVERSATION_TTL_SETTING: "36h"}).conversation_ttl_seconds == 129_600


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        ("2w", "is not a duration"),
        ("-5", "is not a duration"),
        ("fourteen days", "is not a duration"),
        ("30s", "must be 0 (conversations never expire) or at least 60 seconds"),
        ("0.5m", "must be 0 (conversations never expire) or at least 60 seconds"),
    ],
)
def test_an_invalid_setting_stops_the_app_naming_the_setting_and_the_value(raw: str, complaint: str) -> None:
    with pytest.raises(ValueError) as raised:
        HostSettings.from_environment({CONVERSATION_TTL_SETTING: raw})

    assert complaint in str(raised.value)
    assert f"App setting AGENT_HOST_CONVERSATION_TTL={raw!r}" in str(raised.value)
    assert "14d" in str(raised.value)  # the message shows the format


def test_a_ttl_given_in_code_is_checked_as_the_setting_is() -> None:
    with pytest.raises(ValueError, match=r"HostSettings\(conversation_ttl_seconds\)=5 must be 0"):
        HostSettings(conversation_ttl_seconds=5)
    with pytest.raises(ValueError, match="at least 60 seconds"):
        HostSettings(conversation_ttl_seconds=float("inf"))


def test_add_agent_takes_a_timedelta_or_seconds_and_zero_for_never() -> None:
    app = build_app(settings=HostSettings(conversation_ttl_seconds=3600))
    app.add_agent(make_agent(ScriptedChatClient(), "short"), conversation_ttl=datetime.timedelta(minutes=5))
    app.add_agent(make_agent(ScriptedChatClient(), "forever"), conversation_ttl=0)
    app.add_agent(make_agent(ScriptedChatClient(), "default"))

    ttls = {name: route.conversation_ttl_seconds for name, route in app._agent_routes.items()}

    assert ttls == {"short": 300, "forever": 0, "default": 3600}
    assert app._expiry.ttl_for("conversation_short") == 300
    assert app._expiry.ttl_for("conversation_unknown") == 0  # an entity this app does not host is not watched


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        (10, "conversation_ttl=10 must be 0 (conversations never expire) or at least 60 seconds"),
        (datetime.timedelta(seconds=-60), "must be 0"),
        ("14d", "must be a timedelta or a number of seconds, got str"),
        (True, "must be a timedelta or a number of seconds, got bool"),
    ],
)
def test_an_invalid_agent_ttl_is_a_startup_error_naming_the_agent_and_parameter(value: object, complaint: str) -> None:
    app = build_app()

    with pytest.raises(ValueError, match=r"add_agent\('support'\): conversation_ttl") as raised:
        app.add_agent(make_agent(ScriptedChatClient(), "support"), conversation_ttl=value)  # type: ignore[arg-type]

    assert complaint in str(raised.value)
    assert "support" not in app.agents


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "off"), (1_209_600, "14d"), (5_400, "90m"), (3_600, "1h"), (75, "75s")]
)
def test_a_ttl_is_described_as_a_person_reads_it(seconds: float, shown: str) -> None:
    assert describe_ttl(seconds) == shown
