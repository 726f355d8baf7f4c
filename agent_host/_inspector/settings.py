"""Whether the app serves the inspector: the `AGENT_HOST_INSPECTOR` app setting (`python -m agent_host serve` turns
it on unless it is set; an app on Azure serves it only when the setting says so)."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

INSPECTOR_SETTING = "AGENT_HOST_INSPECTOR"
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})


def inspector_from_settings(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `AGENT_HOST_INSPECTOR` turns the inspector on (unset or empty: off).

    Raises:
        ValueError: the setting is neither on (`1`, `true`, `yes`, `on`) nor off (`0`, `false`, `no`, `off`, empty).
    """
    env = os.environ if environ is None else environ
    raw = env.get(INSPECTOR_SETTING) or ""
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ValueError(
        f"Setting {INSPECTOR_SETTING}={raw!r} is not a switch: set 1 to serve the inspector page (/api/inspector), "
        "0 or nothing not to."
    )


def turn_on_unless_set(environ: MutableMapping[str, str]) -> None:
    """Turn the inspector on in `environ` unless the setting is already there (`serve`'s default)."""
    if not environ.get(INSPECTOR_SETTING):
        environ[INSPECTOR_SETTING] = "1"
