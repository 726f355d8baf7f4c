"""What the host hands a function for its durable client binding: the binding's JSON, pointing at the webhook API.

Every trigger the local host runs (HTTP routes, MCP tools) hands the same JSON. Knows the binding format only.
"""

from __future__ import annotations

import json


def durable_client_binding(task_hub: str, rpc_base_url: str) -> str:
    """The durable client binding JSON for a task hub.

    Args:
        task_hub: The task hub the binding names.
        rpc_base_url: The private webhook API's base URL (``rpcBaseUrl``), which the client calls without a key.

    Returns:
        The JSON string ``DFApp`` turns into a ``DurableOrchestrationClient``.
    """
    return json.dumps({"taskHubName": task_hub, "creationUrls": {}, "managementUrls": {}, "rpcBaseUrl": rpc_base_url})
