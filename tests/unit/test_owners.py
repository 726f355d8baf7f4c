"""Who a request's caller is when conversations have owners: App Service's two headers, the hook, the admin key."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agent_host import UnauthenticatedError
from agent_host._owners import Caller, Owners, app_service_principal, owners_of


def principal(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-ms-client-principal-id": "id-1"}, "id-1"),
        ({"x-ms-client-principal": principal({"claims": [{"typ": "oid", "val": "oid-1"}]})}, "oid-1"),
        (
            {
                "x-ms-client-principal": principal(
                    {
                        "claims": [
                            {"typ": "sub", "val": "sub-1"},
                            {"typ": "http://schemas.microsoft.com/identity/claims/objectidentifier", "val": "oid-2"},
                        ]
                    }
                )
            },
            "oid-2",
        ),
        ({"x-ms-client-principal": principal({"userId": "swa-1", "userRoles": ["authenticated"]})}, "swa-1"),
        ({"x-ms-client-principal": principal({"claims": [{"typ": "name", "val": "Ada"}]})}, None),
        ({"x-ms-client-principal": "not base64!"}, None),
        ({"x-ms-client-principal": principal(["a list"])}, None),
        ({}, None),
    ],
    ids=[
        "principal-id",
        "oid-claim",
        "object-id-before-sub",
        "static-web-apps",
        "no-id-claim",
        "garbage",
        "list",
        "none",
    ],
)
def test_the_app_service_principal_comes_from_either_header(headers: dict[str, str], expected: str | None) -> None:
    assert app_service_principal(headers) == expected


def test_the_caller_is_the_admin_only_with_the_admin_key_in_the_header_or_the_query() -> None:
    owners = Owners(admin_key="admin-1")

    assert owners.caller({"X-Functions-Key": "admin-1"}, {}) == Caller(None, admin=True)
    assert owners.caller({}, {"code": "admin-1"}) == Caller(None, admin=True)
    assert owners.caller({"x-functions-key": "other", "X-MS-CLIENT-PRINCIPAL-ID": "u1"}, {}) == Caller("u1")
    with pytest.raises(UnauthenticatedError):
        owners.caller({"x-functions-key": "other"}, {})


def test_a_host_names_the_header_the_admin_key_comes_in_and_may_take_no_query() -> None:
    owners = owners_of(True, {"AGENT_HOST_ADMIN_KEY": "admin-1"}, admin_key_header="x-admin", admin_key_param=None)

    assert owners is not None
    assert owners.caller({"X-Admin": "admin-1"}, {}) == Caller(None, admin=True)
    assert owners.caller({"x-functions-key": "admin-1", "X-MS-CLIENT-PRINCIPAL-ID": "u1"}, {}) == Caller("u1")
    with pytest.raises(UnauthenticatedError):
        owners.caller({}, {"code": "admin-1"})


def test_without_the_setting_no_key_is_the_admin() -> None:
    owners = owners_of(True, {})

    assert owners is not None and owners.admin_key is None
    with pytest.raises(UnauthenticatedError):
        owners.caller({"x-functions-key": ""}, {})


def test_the_option_is_off_true_or_a_hook() -> None:
    assert owners_of(False, {"AGENT_HOST_ADMIN_KEY": "k"}) is None
    hooked = owners_of(lambda headers: headers.get("x-user"), {"AGENT_HOST_ADMIN_KEY": "k"})
    assert hooked is not None and hooked.admin_key == "k"
    assert hooked.caller({"X-User": "carol"}, {}) == Caller("carol")  # the hook reads lower-case names
    with pytest.raises(ValueError, match="conversation_owners must be"):
        owners_of("yes", {})  # type: ignore[arg-type]
