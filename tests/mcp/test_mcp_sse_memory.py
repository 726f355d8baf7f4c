"""The legacy SSE transport under a client that posts and never reads its stream, in a served host process: the
process's memory stays where it started, because such a client loses its session instead of being owed answers."""

from __future__ import annotations

import http.client
import json
import socket
import textwrap
import time
from pathlib import Path

from local_host.served import ServedProcess, serve_command
from mcp_harness import MCP_PATH

APP = """
    from agent_framework import Agent

    from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient

    app = AgentFunctionApp(
        [Agent(OfflineChatClient(), "You remember names.", name="assistant", description="Remembers names.")],
        settings=HostSettings(),
        enable_mcp_tool_trigger=True,
    )
"""
POSTED = 9_000
# Unbounded, these 9,000 calls took the process from 67 to 310 MB (312 MB once the client had left); bounded, they
# add about 4 MB.
MAX_GROWTH_MB = 20


def rss_mb(pid: int) -> float:
    """The process's resident set size, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def open_unread_stream(port: int) -> tuple[socket.socket, str]:
    """Open the SSE stream, read only up to its message endpoint, and never read it again."""
    stream = socket.create_connection(("127.0.0.1", port), timeout=30)
    stream.sendall(f"GET {MCP_PATH}/sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
    head = b""
    while not (b"event: endpoint" in head and head.endswith(b"\n\n")):
        head += stream.recv(1)
    return stream, head.rsplit(b"data: ", 1)[1].strip().decode()


def test_a_client_that_never_reads_its_sse_stream_leaves_the_hosts_memory_where_it_was(tmp_path: Path) -> None:
    (tmp_path / "mcp_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    host = ServedProcess(tmp_path, serve_command("mcp_app:app"), {}, app_dir=tmp_path)
    host.start()
    statuses: dict[int, int] = {}
    poster = http.client.HTTPConnection("127.0.0.1", host.port, timeout=30)
    try:
        assert host.process is not None
        stream, endpoint = open_unread_stream(host.port)
        start = rss_mb(host.process.pid)
        for number in range(POSTED):
            # Agent turns across ten conversations: each answer is owed until the stream takes it.
            call = {"name": "assistant", "arguments": {"query": "hello " * 50, "sessionId": f"c{number % 10}"}}
            body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call})
            poster.request("POST", f"{MCP_PATH}/{endpoint}", body, {"Content-Type": "application/json"})
            reply = poster.getresponse()
            reply.read()
            statuses[reply.status] = statuses.get(reply.status, 0) + 1
        loaded = rss_mb(host.process.pid)
        stream.close()
        time.sleep(1)
        left = rss_mb(host.process.pid)
    finally:
        poster.close()
        host.stop()

    print(f"RSS {start:.1f} MB at the start, {loaded:.1f} MB after {POSTED} posts, {left:.1f} MB after the client left")
    print(f"statuses {statuses}")
    assert statuses.get(400, 0) >= POSTED - 1_000  # the session was closed early on
    assert loaded - start < MAX_GROWTH_MB and left - start < MAX_GROWTH_MB
