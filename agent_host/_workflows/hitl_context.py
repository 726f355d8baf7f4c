"""WorkflowHitlContext: inside a hosted workflow's executor, the URLs a person answers a pending request at.

The same API as agent-framework-azurefunctions' class of that name, so its executors run here unchanged: `from_context`
reads the run's host metadata the executor activity puts on its runner context (`HostedRunnerContext`), and the URLs
are those of the published route family (`/{routePrefix}/workflow/{name}/respond/{runId}/{requestId}`), whose
status route lists the same `respondUrl`s. Knows the host metadata keys and host.json, nothing about HTTP handlers.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._deps.agent_framework_workflows_private import runner_context_of
from .contract import HOST_INSTANCE_ID, HOST_REQUEST_PATH_PREFIX, HOST_WORKFLOW_NAME

# The app setting Azure Functions sets to the app's host name (add it to local.settings.json for `func start`).
WEBSITE_HOSTNAME_SETTING = "WEBSITE_HOSTNAME"
DEFAULT_ROUTE_PREFIX = "api"
_LOOPBACK_HOSTS = frozenset({"localhost", "0.0.0.0", "::1"})


@dataclass(frozen=True)
class WorkflowHitlContext:
    """Builds the respond and status URLs of a hosted workflow run from inside one of its executors.

    Attributes:
        instance_id: The top-level run's id (a sub-workflow's requests are answered through it).
        workflow_name: The top-level workflow's name.
        base_url_override: Scheme and host to build URLs on, in place of `WEBSITE_HOSTNAME`.
        request_path_prefix: `{executorId}~{n}~` for each sub-workflow from the top-level run down to this one.
    """

    instance_id: str
    workflow_name: str
    base_url_override: str | None = None
    request_path_prefix: str = ""

    @classmethod
    def from_context(cls, ctx: Any, *, base_url: str | None = None) -> WorkflowHitlContext | None:
        """The context of the run the executor's `WorkflowContext` belongs to, or None when it runs in process
        (not hosted), so a notifying executor can skip its notice.

        Args:
            ctx: The `WorkflowContext` the executor's handler was given.
            base_url: Scheme and host to build URLs on (a custom domain, say) instead of `WEBSITE_HOSTNAME`.
        """
        metadata = getattr(runner_context_of(ctx), "host_metadata", None)
        if not isinstance(metadata, dict):
            return None
        instance_id, workflow_name = metadata.get(HOST_INSTANCE_ID), metadata.get(HOST_WORKFLOW_NAME)
        if not isinstance(instance_id, str) or not isinstance(workflow_name, str):
            return None
        prefix = metadata.get(HOST_REQUEST_PATH_PREFIX)
        return cls(
            instance_id=instance_id,
            workflow_name=workflow_name,
            base_url_override=base_url,
            request_path_prefix=prefix if isinstance(prefix, str) else "",
        )

    @staticmethod
    async def pending_request_id(ctx: Any) -> str | None:
        """The id of the request the executor made last (`await ctx.request_info(...)` just before), or None.

        Each executor runs in its own activity with its own runner context, so the newest pending request is its own.
        """
        getter = getattr(runner_context_of(ctx), "get_pending_request_info_events", None)
        if getter is None:
            return None
        events = await getter()
        return next(reversed(events)) if events else None

    @property
    def base_url(self) -> str:
        """Scheme and host the URLs are built on: the override, else `WEBSITE_HOSTNAME` (http for a loopback host).

        Raises:
            RuntimeError: neither is available.
        """
        if self.base_url_override:
            return self.base_url_override.rstrip("/")
        hostname = os.environ.get(WEBSITE_HOSTNAME_SETTING)
        if not hostname:
            raise RuntimeError(
                f"Cannot build a HITL URL: no base URL is available. Set the '{WEBSITE_HOSTNAME_SETTING}' app setting "
                "(Azure Functions sets it; for `func start` add it to Values in local.settings.json, e.g. "
                "'localhost:7071'), or pass base_url=... to WorkflowHitlContext.from_context()."
            )
        if hostname.startswith(("http://", "https://")):
            return hostname.rstrip("/")
        scheme = "http" if _is_loopback(hostname) else "https"
        return f"{scheme}://{hostname.rstrip('/')}"

    def build_respond_url(self, request_id: str) -> str:
        """The URL a person POSTs their response to; `request_id` is the bare id (`request_path_prefix` is added)."""
        return f"{self._workflow_url()}/respond/{self.instance_id}/{self.request_path_prefix}{request_id}"

    def build_status_url(self) -> str:
        """The URL of the run's status, which lists its pending requests."""
        return f"{self._workflow_url()}/status/{self.instance_id}"

    def _workflow_url(self) -> str:
        prefix = route_prefix()
        return f"{self.base_url}{'/' + prefix if prefix else ''}/workflow/{self.workflow_name}"


@functools.cache
def route_prefix() -> str:
    """The app's route prefix, `extensions.http.routePrefix` in the app's host.json (`AzureWebJobsScriptRoot`, else
    the working directory), `api` when unset; read once per process."""
    root = os.environ.get("AzureWebJobsScriptRoot") or os.getcwd()  # noqa: SIM112 (the host's own spelling)
    try:
        config = json.loads((Path(root) / "host.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT_ROUTE_PREFIX
    http = config.get("extensions", {}).get("http", {}) if isinstance(config, dict) else {}
    prefix = http.get("routePrefix") if isinstance(http, dict) else None
    return prefix.strip("/") if isinstance(prefix, str) else DEFAULT_ROUTE_PREFIX


def _is_loopback(host: str) -> bool:
    """Whether `host` (`name`, `name:port`, `[::1]:port` or a bare IPv6 address) is a loopback address."""
    host = host.strip().lower()
    name = host if host.count(":") > 1 and not host.startswith("[") else urlsplit(f"//{host}").hostname or ""
    return name in _LOOPBACK_HOSTS or name.startswith("127.")
