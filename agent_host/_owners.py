"""Who a request's caller is when conversations have owners: the App Service (or Container Apps) principal or the
app's hook, or the admin key. Knows request headers (an HTTP request's or an MCP invocation's), nothing of
conversations.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._errors import UnauthenticatedError

# A hook names the caller from the request's headers (names in lower case), or None when it names nobody.
OwnerHook = Callable[[Mapping[str, str]], str | None]

PRINCIPAL_ID_HEADER = "x-ms-client-principal-id"
PRINCIPAL_HEADER = "x-ms-client-principal"
FUNCTION_KEY_HEADER = "x-functions-key"
FUNCTION_KEY_PARAM = "code"
ADMIN_KEY_SETTING = "AGENT_HOST_ADMIN_KEY"
# The claims of an App Service principal that name the user, most specific first (Entra ID's object id, then the
# provider's subject); Static Web Apps' principal names it `userId` instead.
_ID_CLAIMS = (
    "http://schemas.microsoft.com/identity/claims/objectidentifier",
    "oid",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier",
    "sub",
)


def app_service_principal(headers: Mapping[str, str]) -> str | None:
    """The principal App Service authentication passes (Container Apps authentication passes the same headers):
    `X-MS-CLIENT-PRINCIPAL-ID`, or the id claim of the base64 JSON `X-MS-CLIENT-PRINCIPAL`; None when neither names
    one."""
    principal_id = headers.get(PRINCIPAL_ID_HEADER)
    if principal_id:
        return principal_id
    encoded = headers.get(PRINCIPAL_HEADER)
    if not encoded:
        return None
    try:
        principal = json.loads(base64.b64decode(encoded, validate=True))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(principal, dict):
        return None
    if isinstance(principal.get("userId"), str) and principal["userId"]:
        return str(principal["userId"])
    claims = {claim.get("typ"): claim.get("val") for claim in principal.get("claims") or () if isinstance(claim, dict)}
    return next((str(claims[name]) for name in _ID_CLAIMS if isinstance(claims.get(name), str) and claims[name]), None)


@dataclass(frozen=True)
class Caller:
    """Who is asking: a principal, or the admin key (which sees and changes every conversation)."""

    owner: str | None
    admin: bool = False


@dataclass(frozen=True)
class Owners:
    """An app's conversation owners: how a request names its caller, and the key that sees every conversation.

    Attributes:
        principal: The hook that names the caller from the request's headers.
        admin_key: The key whose requests see every conversation, or None for none.
        admin_key_header: The header a request presents the admin key in (lower case): the function key's on
            Functions, where the host checks the key first.
        admin_key_param: The query parameter that may present it instead (Functions' `?code=`), or None for none.
    """

    principal: OwnerHook = app_service_principal
    admin_key: str | None = None
    admin_key_header: str = FUNCTION_KEY_HEADER
    admin_key_param: str | None = FUNCTION_KEY_PARAM

    def caller(self, headers: Mapping[str, str], params: Mapping[str, str]) -> Caller:
        """The request's caller.

        Raises:
            UnauthenticatedError: the request carries neither the admin key nor a principal.
        """
        lowered = {name.lower(): value for name, value in headers.items()}
        key = lowered.get(self.admin_key_header) or (self.admin_key_param and params.get(self.admin_key_param))
        if self.admin_key and key and hmac.compare_digest(key.encode(), self.admin_key.encode()):
            return Caller(None, admin=True)
        owner = self.principal(lowered)
        if not owner:
            raise UnauthenticatedError()
        return Caller(owner)


def owners_of(
    option: bool | OwnerHook,
    environ: Mapping[str, str] | None = None,
    *,
    admin_key_header: str = FUNCTION_KEY_HEADER,
    admin_key_param: str | None = FUNCTION_KEY_PARAM,
) -> Owners | None:
    """The app's owners from its `conversation_owners` option (off, App Service's principal, or a hook), with the
    admin key the `AGENT_HOST_ADMIN_KEY` setting holds, presented in `admin_key_header` (or `admin_key_param`).

    Raises:
        ValueError: the option is neither a bool nor a callable.
    """
    if option is False:
        return None
    admin_key = (os.environ if environ is None else environ).get(ADMIN_KEY_SETTING) or None
    if option is True:
        return Owners(app_service_principal, admin_key, admin_key_header, admin_key_param)
    if callable(option):
        return Owners(option, admin_key, admin_key_header, admin_key_param)
    raise ValueError(
        f"conversation_owners must be True, False or a callable from request headers to an owner id, not {option!r}."
    )
