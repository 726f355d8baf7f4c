"""Whether the app serves the inspector: the `AGENT_HOST_INSPECTOR` app setting (`python -m agent_host serve` turns
it on unless it is set; an app on Azure serves it only when the setting says so)."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

from .._settings import switch_setting, turn_switch_on_unless_set

INSPECTOR_SETTING = "AGENT_HOST_INSPECTOR"


def inspector_from_settings(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `AGENT_HOST_INSPECTOR` turns the inspector on (unset or empty: off).

    Raises:
        ValueError: the setting is neither on (`1`, `true`, `yes`, `on`) nor off (`0`, `false`, `no`, `off`, empty).
    """
    env = os.environ if environ is None else environ
    return switch_setting(env, INSPECTOR_SETTING, "to serve the inspector page (/api/inspector)", "not to")


def turn_on_unless_set(environ: MutableMapping[str, str]) -> None:
    """Turn the inspector on in `environ` unless the setting is already there (`serve`'s default)."""
    turn_switch_on_unless_set(environ, INSPECTOR_SETTING)
