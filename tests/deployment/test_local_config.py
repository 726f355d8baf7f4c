"""Contract: the local host reads host.json (route prefix) and local.settings.json like the Functions host does."""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import hosting
import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost

from agent_host.__main__ import route_prefix
from agent_host._local_host import LocalHost

ROOT = Path(__file__).resolve().parents[2]


def write_host_json(directory: Path, http: dict | None) -> Path:
    config = json.loads((ROOT / "host.json").read_text(encoding="utf-8"))
    if http is None:
        config.get("extensions", {}).pop("http", None)
    else:
        config.setdefault("extensions", {})["http"] = http
    path = directory / "host.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_the_checked_in_host_json_uses_the_api_prefix() -> None:
    assert route_prefix(ROOT / "host.json") == "api"


@pytest.mark.parametrize(
    ("http", "expected"),
    [({"routePrefix": "v1"}, "v1"), ({"routePrefix": ""}, ""), ({}, "api"), (None, "api")],
    ids=["custom", "empty-means-none", "http-without-prefix", "no-http-section"],
)
def test_route_prefix_is_read_from_host_json(tmp_path: Path, http: dict | None, expected: str) -> None:
    assert route_prefix(write_host_json(tmp_path, http)) == expected


def test_local_host_serves_every_route_under_the_prefix_and_nothing_under_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hosting, "LocalHost", functools.partial(LocalHost, route_prefix="v1"))
    host = RunningHost(lambda: build_app(make_agent(ScriptedChatClient(), "assistant")), tmp_path)
    base_url = host.host.base_url
    try:
        health = host.request("GET", "/v1/health")
        pending = host.request("POST", "/v1/agents/assistant/conversations/c1/turns", {"message": "hi", "wait": False})
        host.wait_idle()
        location = pending.headers["location"]
        result = host.request("GET", location.removeprefix(base_url))
        unprefixed = host.request("GET", "/api/health")
    finally:
        host.stop()

    assert [agent["name"] for agent in health.json()["agents"]] == ["assistant"]
    assert pending.status == 202
    assert location.startswith(f"{base_url}/v1/agents/assistant/conversations/c1/turns/")
    assert result.json()["text"] == "reply 1: hi"
    assert (unprefixed.status, unprefixed.json()["error"]["code"]) == (404, "not_found")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def serve_and_get(app_dir: Path, requests: list[tuple[str, dict[str, str]]]) -> tuple[str, list[tuple[int, dict]]]:
    """Run `python -m agent_host serve` in app_dir (as `func start` runs in the app folder) and GET each path."""
    shutil.copy(ROOT / "function_app.py", app_dir)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI_", "AGENT_HOST_"))}
    env["PYTHONPATH"] = hosting.child_pythonpath(ROOT)
    command = [sys.executable, "-m", "agent_host", "serve", "--port", str(port), "--state-dir", str(app_dir / ".s")]
    process = subprocess.Popen(
        command, cwd=app_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        banner = ""
        deadline = time.monotonic() + 60
        while "[api_health]" not in banner and time.monotonic() < deadline and process.poll() is None:
            banner += process.stdout.readline()
        replies = [_get(f"http://127.0.0.1:{port}{path}", headers) for path, headers in requests]
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()
    return banner.replace(f"127.0.0.1:{port}", "HOST"), replies


def test_serve_command_takes_the_prefix_from_host_json_in_the_app_folder(tmp_path: Path) -> None:
    write_host_json(tmp_path, {"routePrefix": "v2"})

    banner, (prefixed, unprefixed) = serve_and_get(tmp_path, [("/v2/health", {}), ("/api/health", {})])

    assert "http://HOST/v2/health  [api_health]" in banner
    assert prefixed[0] == 200 and [agent["name"] for agent in prefixed[1]["agents"]] == ["assistant"]
    assert (unprefixed[0], unprefixed[1]["error"]["code"]) == (404, "not_found")


@pytest.mark.parametrize(("key", "expected_without_key"), [("sekrit", 401), ("", 404)], ids=["set", "empty"])
def test_serve_command_takes_the_function_key_from_local_settings(
    tmp_path: Path, key: str, expected_without_key: int
) -> None:
    shutil.copy(ROOT / "host.json", tmp_path)
    settings = {"IsEncrypted": False, "Values": {"AGENT_HOST_FUNCTION_KEY": key}}
    (tmp_path / "local.settings.json").write_text(json.dumps(settings), encoding="utf-8")
    conversation = "/api/agents/assistant/conversations/nobody"

    _, (without_key, with_key, health) = serve_and_get(
        tmp_path, [(conversation, {}), (conversation, {"x-functions-key": key}), ("/api/health", {})]
    )

    # 404 is the conversation_not_found answer: the request got past the key check.
    assert without_key[0] == expected_without_key
    assert (with_key[0], with_key[1]["error"]["code"]) == (404, "conversation_not_found")
    assert health[0] == 200
