"""The orchestration test app as a module-level `app`, for `python -m agent_host serve --app
local_host.served_orchestrations:app` (on the system clock)."""

from __future__ import annotations

from .orchestration_apps import build_orchestration_app

app = build_orchestration_app()
