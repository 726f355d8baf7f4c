"""The app's own storage account, found the way the Functions host finds it: from the `AzureWebJobsStorage` settings.

Durable Functions keeps its state in that account; the turn stream store uses its Table service through the same
connection, so streaming needs no new secret and no new service. The host reads either
- `AzureWebJobsStorage`: a connection string (`UseDevelopmentStorage=true` is Azurite), or
- the identity-based settings under the `AzureWebJobsStorage__` prefix: `tableServiceUri` (or `accountName`, for
  `https://<account>.table.core.windows.net`), `credential=managedidentity` and, for a user-assigned identity,
  `clientId`. Without `credential` the host uses the developer's own sign-in (`DefaultAzureCredential` here).
A non-empty connection string wins over the prefixed settings, as it does for the host. Knows no table layout.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from azure.core.credentials_async import AsyncTokenCredential

CONNECTION_SETTING = "AzureWebJobsStorage"
TABLE_SERVICE_URI = "tableServiceUri"
ACCOUNT_NAME = "accountName"
CREDENTIAL = "credential"
CLIENT_ID = "clientId"
MANAGED_IDENTITY = "managedidentity"


def prefixed(name: str) -> str:
    """The full name of one identity-based setting, e.g. `AzureWebJobsStorage__tableServiceUri`."""
    return f"{CONNECTION_SETTING}__{name}"


@dataclass(frozen=True)
class HostStorageConnection:
    """How to reach the app's storage account's Table service.

    Attributes:
        connection_string: The `AzureWebJobsStorage` connection string, when the app has one.
        table_endpoint: The Table service endpoint, for an identity-based connection.
        managed_identity: Whether `credential=managedidentity` names the app's managed identity.
        client_id: The user-assigned identity's client id, when one is named.
    """

    connection_string: str | None = None
    table_endpoint: str | None = None
    managed_identity: bool = False
    client_id: str | None = None

    def describe(self) -> str:
        """Where the connection goes, without secrets (an account key or SAS never appears)."""
        if self.connection_string is not None:
            fields = _connection_string_fields(self.connection_string)
            if fields.get("usedevelopmentstorage", "").lower() == "true":
                return "Azurite (UseDevelopmentStorage=true)"
            where = fields.get("tableendpoint") or f"account {fields.get('accountname', '(unnamed)')}"
            return f"{where} (connection string)"
        who = "managed identity" if self.managed_identity else "DefaultAzureCredential"
        if self.client_id:
            who += f" {self.client_id}"
        return f"{self.table_endpoint} ({who})"

    def credential(self) -> AsyncTokenCredential:
        """A new async credential for the identity-based connection; it belongs to the loop that uses it.

        Raises:
            ValueError: the connection is a connection string, which needs no credential.
        """
        if self.connection_string is not None:
            raise ValueError("A connection-string connection needs no credential.")
        from azure.identity.aio import DefaultAzureCredential, ManagedIdentityCredential

        if self.managed_identity:
            return (
                ManagedIdentityCredential(client_id=self.client_id) if self.client_id else ManagedIdentityCredential()
            )
        return DefaultAzureCredential(managed_identity_client_id=self.client_id)


def host_storage_connection(environ: Mapping[str, str] | None = None) -> HostStorageConnection | None:
    """The app's storage connection from its settings, or None when none of them is set.

    Raises:
        ValueError: the settings are present but name no Table service, an unknown credential, or a bad URI; the
            message names the setting.
    """
    env = os.environ if environ is None else environ
    connection_string = (env.get(CONNECTION_SETTING) or "").strip()
    if connection_string:
        return HostStorageConnection(connection_string=connection_string)
    identity = {
        name: (env.get(prefixed(name)) or "").strip()
        for name in (TABLE_SERVICE_URI, ACCOUNT_NAME, CREDENTIAL, CLIENT_ID)
    }
    if not any(identity.values()):
        return None
    endpoint = identity[TABLE_SERVICE_URI] or _account_endpoint(identity[ACCOUNT_NAME])
    if not endpoint:
        raise ValueError(
            f"The app's identity-based storage settings name no Table service: set {prefixed(TABLE_SERVICE_URI)} "
            f"(e.g. https://<account>.table.core.windows.net) or {prefixed(ACCOUNT_NAME)}."
        )
    address = urlsplit(endpoint)
    if address.scheme not in ("https", "http") or not address.netloc:
        raise ValueError(
            f"{prefixed(TABLE_SERVICE_URI)} must be the Table service's URL, e.g. "
            f"https://<account>.table.core.windows.net; got {endpoint!r}."
        )
    credential = identity[CREDENTIAL].lower()
    if credential not in ("", MANAGED_IDENTITY):
        raise ValueError(
            f"{prefixed(CREDENTIAL)} may only be {MANAGED_IDENTITY!r} (or unset for the developer's own sign-in); "
            f"got {identity[CREDENTIAL]!r}."
        )
    return HostStorageConnection(
        table_endpoint=endpoint,
        managed_identity=credential == MANAGED_IDENTITY,
        client_id=identity[CLIENT_ID] or None,
    )


def _account_endpoint(account: str) -> str:
    return f"https://{account}.table.core.windows.net" if account else ""


def _connection_string_fields(connection_string: str) -> dict[str, Any]:
    """A connection string's `key=value` fields, keys lower-cased (values may contain `=`)."""
    fields: dict[str, Any] = {}
    for field in connection_string.split(";"):
        name, _, value = field.partition("=")
        if name.strip():
            fields[name.strip().lower()] = value.strip()
    return fields
