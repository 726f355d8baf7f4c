"""The callers of the per-user conversation tests (`conversation_owners`) and what they do on any host: Alice and Bob
as App Service and Container Apps authentication pass them, the admin key as each host takes it, and Alice's
conversation c1."""

from __future__ import annotations

import base64
import json
from typing import Any, Protocol

from hosting import Reply

ADMIN_KEY = "admin-Key-Of-The-Test-777"
ALICE = {"X-MS-CLIENT-PRINCIPAL-ID": "alice-oid"}
# Bob's principal arrives only as the base64 JSON principal, so the claim lookup is exercised too.
BOB = {
    "X-MS-CLIENT-PRINCIPAL": base64.b64encode(
        json.dumps({"auth_typ": "aad", "claims": [{"typ": "oid", "val": "bob-oid"}]}).encode()
    ).decode()
}
CONVERSATIONS = "/api/agents/assistant/conversations"
C1 = f"{CONVERSATIONS}/c1"


class OwnersHost(Protocol):
    """A host of an app with owners the tests send requests to (`RunningHost`, `front_doors.MemoryFunctionApp`,
    `worker_hosting.RunningWorkerHost`), and the header it takes the admin key in."""

    admin_key_header: str

    def request(self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None) -> Reply:
        """One request; the reply."""
        ...


def admin(host: OwnersHost, key: str = ADMIN_KEY) -> dict[str, str]:
    """`key` presented as the admin key to `host`: the function key on Functions, `X-Agent-Host-Admin-Key` on the
    worker's HTTP API."""
    return {host.admin_key_header: key}


def started(host: OwnersHost) -> str:
    """Alice's conversation c1 after one turn; the turn's id."""
    reply = host.request("POST", f"{C1}/turns", {"message": "My name is Ada."}, headers=ALICE)
    assert reply.status == 200, reply.body
    return str(reply.json()["turnId"])


def snapshot(host: OwnersHost) -> tuple[Any, Any]:
    """Conversation c1 and every message it stores, read with the admin key."""
    conversation = host.request("GET", C1, headers=admin(host)).json()
    messages = host.request("GET", f"{C1}/messages?includeExcluded=true", headers=admin(host)).json()
    return conversation, messages
