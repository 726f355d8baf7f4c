"""The batch JSON the local host hands an entity function is the Durable Functions host's, as tests/batches.py writes
it from the protocol: caught where the SDK reads it, so the check holds however the local host builds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import azure.durable_functions as df
import azure.functions as func
import pytest
from azure.durable_functions.models.DurableEntityContext import DurableEntityContext
from batches import entity_batch
from hosting import RunningHost


def counter_app() -> df.DFApp:
    """A Counter entity that adds each signal's `n`, and a route that signals it with the request's JSON body."""
    app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.entity_trigger(context_name="context", entity_name="Counter")
    def counter(context: df.DurableEntityContext) -> None:
        value = context.get_state(lambda: 0) + context.get_input()["n"]
        context.set_state(value)
        context.set_result(value)

    @app.route(route="counter/{key}", methods=["POST"])
    @app.durable_client_input(client_name="client")
    async def signal(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        await client.signal_entity(df.EntityId("Counter", req.route_params["key"]), "add", req.get_json())
        return func.HttpResponse(status_code=202)

    return app


@pytest.fixture
def received(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every batch JSON an entity function receives, as the SDK's entity trigger reads it."""
    batches: list[str] = []
    read = DurableEntityContext.from_json

    def recording(json_str: str) -> Any:
        batches.append(json_str)
        return read(json_str)

    monkeypatch.setattr(DurableEntityContext, "from_json", staticmethod(recording))
    return batches


def test_a_signal_reaches_a_new_then_an_existing_entity_as_the_hosts_batch_json(
    tmp_path: Path, received: list[str]
) -> None:
    running = RunningHost(counter_app, tmp_path, invocation="direct")
    try:
        assert running.request("POST", "/api/counter/k1", {"n": 2}).status == 202
        running.wait_idle()
        assert running.request("POST", "/api/counter/k1", {"n": 3}).status == 202
        running.wait_idle()
    finally:
        running.stop()

    first, second = (json.loads(batch) for batch in received)
    assert first == json.loads(entity_batch("counter", "k1", None, [("add", {"n": 2})]))
    assert second == json.loads(entity_batch("counter", "k1", "2", [("add", {"n": 3})]))
