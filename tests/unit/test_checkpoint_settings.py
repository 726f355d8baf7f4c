"""`AGENT_HOST_CHECKPOINTS`: on unless switched off, refused when it is not a switch."""

from __future__ import annotations

import pytest

from agent_host import HostSettings
from agent_host._settings import CHECKPOINTS_SETTING


@pytest.mark.parametrize("raw", [None, "", "1", "on", "TRUE"])
def test_checkpoints_are_on_unless_switched_off(raw: str | None) -> None:
    environ = {} if raw is None else {CHECKPOINTS_SETTING: raw}

    assert HostSettings.from_environment(environ).checkpoints is True


@pytest.mark.parametrize("raw", ["0", "off", "no", "false"])
def test_checkpoints_switched_off(raw: str) -> None:
    assert HostSettings.from_environment({CHECKPOINTS_SETTING: raw}).checkpoints is False


def test_a_checkpoints_setting_that_is_not_a_switch_is_refused() -> None:
    with pytest.raises(ValueError, match="AGENT_HOST_CHECKPOINTS='maybe' is not a switch"):
        HostSettings.from_environment({CHECKPOINTS_SETTING: "maybe"})
