"""`python -m agent_host serve` serves an app's MCP tools at the extension's endpoint, behind `--function-key`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from hosting import child_pythonpath, free_port
from mcp import ClientSession
from mcp_harness import MCP_PATH, open_session
from tool_results import texts

ROOT = Path(__file__).resolve().parents[2]
APP = """
    from agent_framework import Agent

    from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient

    app = AgentFunctionApp(
        [Agent(OfflineChatClient(), "You remember names.", name="assistant", description="Remembers names.")],
        settings=HostSettings(),
        enable_mcp_tool_trigger=True,
    )
"""


def status_without_key(url: str) -> int:
    request = urllib.request.Request(url, b"{}", {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_serve_prints_the_mcp_endpoint_and_serves_it_with_the_function_key(tmp_path: Path) -> None:
    (tmp_path / "mcp_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    port = free_port()
    command = [sys.executable, "-m", "agent_host", "serve", "--app", "mcp_app:app", "--port", str(port)]
    command += ["--state-dir", str(tmp_path / "state"), "--function-key", "local-key"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI", "AGENT_HOST_"))}
    env["PYTHONPATH"] = child_pythonpath(ROOT)
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    base = f"http://127.0.0.1:{port}"
    lines: list[str] = []
    # Read the output on a thread: a banner missing a line must fail the test, not block it on readline.
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("HTTP routes:") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)

        async def recall(session: ClientSession) -> list[str]:
            await session.call_tool("assistant", {"query": "My name is Linus.", "sessionId": "cli"})
            return texts(await session.call_tool("assistant", {"query": "What is my name?", "sessionId": "cli"}))

        async def main() -> list[str]:
            async with open_session(base, headers={"x-functions-key": "local-key"}) as session:
                return await recall(session)

        answer = asyncio.run(main())
        refused = status_without_key(f"{base}{MCP_PATH}")
    finally:
        process.terminate()
        process.wait(30)
        reader.join(10)
        process.stdout.close()
    banner = "".join(lines)

    assert f"Streamable HTTP  {base}{MCP_PATH}" in banner
    assert f"SSE (legacy)     {base}{MCP_PATH}/sse" in banner
    assert "tools: assistant" in banner
    assert answer[0] == "[offline model] Your name is Linus."
    assert refused == 401
