"""The principals of the per-user conversation tests (`conversation_owners=True`) and what they do on either host:
Alice and Bob as App Service authentication names them, the admin key, and Alice's conversation c1."""

from __future__ import annotations

import base64
import json
from typing import Any

from hosting import SendsRequests

ADMIN_KEY = "admin-Key-Of-The-Test-777"
ALICE = {"X-MS-CLIENT-PRINCIPAL-ID": "alice-oid"}
# Bob's principal arrives only as App Service's base64 JSON, so the claim lookup is exercised too.
BOB = {
    "X-MS-CLIENT-PRINCIPAL": base64.b64encode(
        json.dumps({"auth_typ": "aad", "claims": [{"typ": "oid", "val": "bob-oid"}]}).encode()
    ).decode()
}
ADMIN = {"x-functions-key": ADMIN_KEY}
CONVERSATIONS = "/api/agents/assistant/conversations"
C1 = f"{CONVERSATIONS}/c1"


def started(host: SendsRequests) -> str:
    """Alice's conversation c1 after one turn; the turn's id."""
    reply = host.request("POST", f"{C1}/turns", {"message": "My name is Ada."}, headers=ALICE)
    assert reply.status == 200, reply.body
    return str(reply.json()["turnId"])


def snapshot(host: SendsRequests) -> tuple[Any, Any]:
    """Conversation c1 and all its messages, as the admin key reads them."""
    conversation = host.request("GET", C1, headers=ADMIN).json()
    messages = host.request("GET", f"{C1}/messages?includeExcluded=true", headers=ADMIN).json()
    return conversation, messages
