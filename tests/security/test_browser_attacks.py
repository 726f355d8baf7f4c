"""The attacks on a key-less local host, run by a real headless Chromium: another origin's page posting to it, and a
DNS-rebinding name reading from it (Chromium's --host-resolver-rules maps the name to 127.0.0.1, as a rebinding DNS
server would). What the host stored is checked afterwards by a client that is not a browser.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from apps import build_app, make_agent
from browser import start_browser
from hosting import RunningHost

from agent_host import OfflineChatClient

MESSAGES = "/api/agents/assistant/conversations/{id}/messages"
REBOUND_NAME = "rebound.example"

# Each request is one a page may send to any origin without a preflight; `no-cors` hides the answers, not the effects.
ATTACK_PAGE = """<!doctype html><title>loading</title><script>
const target = "%(target)s";
const simple = (path, body, type) => fetch(target + path, {
  method: "POST", mode: "no-cors", body, headers: type ? {"Content-Type": type} : {},
});
Promise.allSettled([
  simple("/api/agents/assistant/conversations/c1/turns", "My name is Mallory.", "text/plain"),
  simple("/api/agents/assistant/run?session_id=c2", "My name is Mallory.", "text/plain"),
  simple("/runtime/webhooks/durabletask/entities/conversation_assistant/kept?op=delete",
    JSON.stringify(JSON.stringify({changeId: "mallory"})), "text/plain"),
  simple("/api/agents/assistant/conversations/c3/turns", "message=hi", "application/x-www-form-urlencoded"),
  // A byte body carries no Content-Type at all, which the turns route reads as JSON.
  simple("/api/agents/assistant/conversations/c4/turns", new TextEncoder().encode('{"message": "Hi"}')),
]).then(() => { document.title = "sent"; });
</script>"""


@pytest.fixture
def running(tmp_path: Path) -> Iterator[RunningHost]:
    host = RunningHost(lambda: build_app(make_agent(OfflineChatClient())), tmp_path)
    host.request("POST", "/api/agents/assistant/conversations/kept/turns", {"message": "My name is Ada."})
    yield host
    host.stop()


@pytest.fixture
def attacker(running: RunningHost) -> Iterator[str]:
    """A page on another origin (another port) that attacks the host; its URL."""
    assert running.host is not None
    page = (ATTACK_PAGE % {"target": running.host.base_url}).encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    yield from start_browser(flags=(f"--host-resolver-rules=MAP {REBOUND_NAME} 127.0.0.1",))


def test_another_origins_page_changes_nothing(driver: Any, running: RunningHost, attacker: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(attacker)
    WebDriverWait(driver, 30).until(lambda d: d.title == "sent")
    running.wait_idle()

    for conversation in ("c1", "c2", "c3", "c4"):
        assert running.request("GET", MESSAGES.format(id=conversation)).status == 404
    kept = running.request("GET", MESSAGES.format(id="kept")).json()
    assert kept["messages"][0]["text"] == "My name is Ada."


def test_a_rebound_name_reads_no_transcript(driver: Any, running: RunningHost) -> None:
    assert running.host is not None
    port = running.host.base_url.rsplit(":", 1)[1]

    driver.get(f"http://{REBOUND_NAME}:{port}{MESSAGES.format(id='kept')}")
    shown = driver.find_element("tag name", "body").text

    assert "host_not_allowed" in shown
    assert "Ada" not in shown
