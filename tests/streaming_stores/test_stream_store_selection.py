"""Which stream store the settings choose: one test per rung of the precedence, and the settings' mistakes.

Also how the app's storage connection is read from the same settings Durable Functions uses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from azure.identity.aio import DefaultAzureCredential, ManagedIdentityCredential

from agent_host._streaming.azure_table_store import AzureTableStreamStore
from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent, TurnStreamStore
from agent_host._streaming.host_storage import HostStorageConnection, host_storage_connection
from agent_host._streaming.redis_store import RedisStreamStore
from agent_host._streaming.selection import UnconfiguredStreamStore, stream_store_from_settings
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host._streaming.store_errors import StreamStoreNotConfiguredError

IDENTITY = {
    "AzureWebJobsStorage__tableServiceUri": "https://stagent.table.core.windows.net/",
    "AzureWebJobsStorage__credential": "managedidentity",
    "AzureWebJobsStorage__clientId": "00000000-0000-0000-0000-000000000001",
}


def close(store: TurnStreamStore) -> None:
    closer = getattr(store, "close", None)
    if closer is not None:
        closer()


def chosen(environ: dict[str, str], **kwargs: object) -> TurnStreamStore:
    store = stream_store_from_settings(environ, **kwargs)  # type: ignore[arg-type]
    close(store)
    return store


def test_the_setting_naming_a_sqlite_file_wins_over_everything(tmp_path: Path) -> None:
    environ = {
        "AGENT_HOST_STREAM_STORE": f"sqlite:{tmp_path}/mine.sqlite3",
        "AzureWebJobsStorage": "UseDevelopmentStorage=true",
    }

    store = chosen(environ, local_state_dir=tmp_path / "state")

    assert isinstance(store, SqliteStreamStore)
    assert store.path == tmp_path.resolve() / "mine.sqlite3"


def test_the_setting_naming_redis_wins_over_the_local_host_and_storage(tmp_path: Path) -> None:
    environ = {"AGENT_HOST_STREAM_STORE": "rediss://:pw@cache.example:6380/2", **IDENTITY}

    store = chosen(environ, local_state_dir=tmp_path, ttl_seconds=600)

    assert isinstance(store, RedisStreamStore)
    assert store._ttl_ms == 600_000
    assert store._where == "Redis at cache.example:6380/2"


def test_the_setting_naming_azure_wins_over_the_local_host(tmp_path: Path) -> None:
    environ = {"AGENT_HOST_STREAM_STORE": "azure", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}

    store = chosen(environ, local_state_dir=tmp_path)

    assert isinstance(store, AzureTableStreamStore)
    assert store.connection == HostStorageConnection(connection_string="UseDevelopmentStorage=true")


def test_the_local_host_keeps_streams_beside_its_entity_store_even_with_azurite_configured(tmp_path: Path) -> None:
    # local.settings.json sets AzureWebJobsStorage for `func start`; `serve` reads it too and must not need Azurite.
    store = chosen({"AzureWebJobsStorage": "UseDevelopmentStorage=true"}, local_state_dir=tmp_path)

    assert isinstance(store, SqliteStreamStore)
    assert store.path == tmp_path.resolve() / "streams.sqlite3"


def test_the_apps_storage_account_is_the_default_on_azure() -> None:
    store = chosen({**IDENTITY, "TASKHUB_NAME": "agenthostprod"})

    assert isinstance(store, AzureTableStreamStore)
    assert store.table_name == "agenthostprodStreams"
    assert store.connection == HostStorageConnection(
        table_endpoint="https://stagent.table.core.windows.net/",
        managed_identity=True,
        client_id="00000000-0000-0000-0000-000000000001",
    )


def test_without_a_task_hub_the_table_has_the_hosts_own_name() -> None:
    store = chosen({"AzureWebJobsStorage": "UseDevelopmentStorage=true"})

    assert isinstance(store, AzureTableStreamStore)
    assert store.table_name == "AgentHostStreams"


def test_with_nothing_configured_the_app_starts_and_streaming_fails_naming_the_setting() -> None:
    store = chosen({"AGENT_HOST_STREAM_STORE": "  ", "AzureWebJobsStorage": ""})

    assert isinstance(store, UnconfiguredStreamStore)
    with pytest.raises(StreamStoreNotConfiguredError, match="Set AGENT_HOST_STREAM_STORE to 'sqlite:<path>'") as raised:
        asyncio.run(store.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA)]))
    with pytest.raises(StreamStoreNotConfiguredError):
        asyncio.run(store.read("a/c/t"))
    with pytest.raises(StreamStoreNotConfiguredError):
        asyncio.run(store.last_id("a/c/t"))
    asyncio.run(store.delete(["a/c/t"]))  # nothing can have been streamed: evicting turn records still works
    assert raised.value.code == "storage_unavailable"


@pytest.mark.parametrize(
    ("environ", "complaint"),
    [
        ({"AGENT_HOST_STREAM_STORE": "sqlite:"}, "sqlite: needs a file path"),
        ({"AGENT_HOST_STREAM_STORE": "azure"}, "neither AzureWebJobsStorage nor"),
        ({"AGENT_HOST_STREAM_STORE": "memcached://:pw@h"}, "got a value starting 'memcached'"),
        ({"AGENT_HOST_STREAM_STORE": "azure", "AzureWebJobsStorage": "x", "TASKHUB_NAME": "my-hub"}, "TASKHUB_NAME"),
        ({"AzureWebJobsStorage__credential": "managedidentity"}, "set AzureWebJobsStorage__tableServiceUri"),
        ({"AzureWebJobsStorage__accountName": "st", "AzureWebJobsStorage__credential": "secret"}, "may only be"),
        ({"AzureWebJobsStorage__tableServiceUri": "stagent.table.core.windows.net"}, "must be the Table service's URL"),
    ],
    ids=[
        "sqlite-without-path",
        "azure-without-storage",
        "unknown-scheme",
        "bad-task-hub",
        "no-table-service",
        "unknown-credential",
        "uri-without-scheme",
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_setting(environ: dict[str, str], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint) as raised:
        stream_store_from_settings(environ)

    assert "pw@" not in str(raised.value)


def test_a_connection_string_wins_over_identity_settings_as_it_does_for_the_host() -> None:
    connection = host_storage_connection({"AzureWebJobsStorage": "UseDevelopmentStorage=true", **IDENTITY})

    assert connection == HostStorageConnection(connection_string="UseDevelopmentStorage=true")
    assert connection.describe() == "Azurite (UseDevelopmentStorage=true)"


def test_an_account_name_gives_the_accounts_table_endpoint_and_the_developers_own_sign_in() -> None:
    connection = host_storage_connection({"AzureWebJobsStorage__accountName": "stagent"})

    assert connection == HostStorageConnection(table_endpoint="https://stagent.table.core.windows.net")
    credential = connection.credential()
    asyncio.run(credential.close())
    assert isinstance(credential, DefaultAzureCredential)


def test_managed_identity_settings_give_that_identitys_credential() -> None:
    connection = host_storage_connection(IDENTITY)

    assert connection is not None
    credential = connection.credential()
    asyncio.run(credential.close())
    assert isinstance(credential, ManagedIdentityCredential)
    assert connection.describe() == (
        "https://stagent.table.core.windows.net/ (managed identity 00000000-0000-0000-0000-000000000001)"
    )


def test_no_storage_settings_means_no_connection_and_a_key_is_never_described() -> None:
    account_key = (
        "DefaultEndpointsProtocol=https;AccountName=stagent;AccountKey=c2VjcmV0PT0=;EndpointSuffix=core.windows.net"
    )
    keyed = host_storage_connection({"AzureWebJobsStorage": account_key})

    assert host_storage_connection({}) is None
    assert host_storage_connection({"AzureWebJobsStorage": " ", "AzureWebJobsStorage__clientId": ""}) is None
    assert keyed is not None
    assert keyed.describe() == "account stagent (connection string)"
