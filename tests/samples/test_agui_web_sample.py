"""The AG-UI web sample in a real headless Chromium: its page, on @ag-ui/client's HttpAgent from npm, against `serve`.

The page is built from the sample's lockfile with `npm ci` and `npm run build` (tests/npm_tools.py), the sample is
served by `python -m agent_host serve` from its folder behind a function key, and the page is driven as a person
would: type, press Enter, press Approve or Reject. What the page shows is checked against what the conversation
holds, read back through the host's own API. Without node, npm or the browser these tests skip, except under CI.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser import by_id, css, screenshot, start_browser, wait
from hosting import Reply, RunningHost, command_environment, free_port, request_at, start_command, stop_serve
from npm_tools import require_tree

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = ROOT / "samples" / "agui_web"
WEB_DIR = SAMPLE_DIR / "web"
KEY = "sample-key"
AGENT = "/api/agents/support"
MODEL_SETTINGS = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
REFUND_CALL = 'refund_order({"order_id":"A1"})'
UNAUTHORIZED = {
    "error": {
        "code": "unauthorized",
        "message": "This function needs a key in the x-functions-key header or the code parameter.",
    }
}


@dataclass
class Served:
    """The sample served by `serve` from its folder."""

    base_url: str

    def get(self, path: str) -> Reply:
        return request_at(self.base_url, "GET", path, headers={"x-functions-key": KEY})

    def stored(self, thread_id: str) -> list[dict[str, Any]]:
        """The conversation's messages, read through the host's API."""
        reply = self.get(f"{AGENT}/conversations/{thread_id}/messages")
        assert reply.status == 200, reply.body
        return list(reply.json()["messages"])

    def messages(self, thread_id: str) -> list[tuple[str, str]]:
        """The conversation's messages as (role, text)."""
        return [(message["role"], message["text"]) for message in self.stored(thread_id)]

    def tool_results(self, thread_id: str) -> list[Any]:
        """The results of every tool call the conversation holds, in order."""
        contents = [content for message in self.stored(thread_id) for content in message["contents"]]
        return [content.get("result") for content in contents if content["type"] == "function_result"]


@pytest.fixture(scope="module")
def bundle() -> Path:
    """The page's bundle, built by the sample's own `npm run build` from its pinned tree."""
    require_tree(WEB_DIR, "build the AG-UI sample's page")
    npm = shutil.which("npm") or "npm"
    done = subprocess.run([npm, "run", "build"], cwd=WEB_DIR, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"npm run build failed:\n{done.stdout}\n{done.stderr}"
    return WEB_DIR / "dist"


@pytest.fixture(scope="module")
def served(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`python -m agent_host serve --app function_app:app` in the sample's folder, behind `KEY`, offline model."""
    env = command_environment(ROOT)
    port = free_port()
    state_dir = tmp_path_factory.mktemp("agui-web-state")
    arguments = ["serve", "--app", "function_app:app", "--port", str(port), "--state-dir", str(state_dir)]
    # Logging at WARNING only: nothing reads the output after the banner, and per-request lines would fill the pipe.
    arguments += ["--function-key", KEY, "--log-level", "WARNING"]
    process = start_command(SAMPLE_DIR, arguments, env)
    try:
        yield Served(f"http://127.0.0.1:{port}")
    finally:
        stop_serve(process)


# @ag-ui/client warns on the console about an event it had to strip or translate, and logs a failed run as an error:
# every page records what it was told, before its own scripts run.
CONSOLE_RECORDER = """
window.consoleSaid = [];
for (const level of ['warn', 'error']) {
  const original = console[level];
  console[level] = (...parts) => {
    window.consoleSaid.push(`${level}: ${parts.map(String).join(' ')}`);
    original(...parts);
  };
}
"""


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    for started in start_browser():
        started.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CONSOLE_RECORDER})
        yield started


def console_said(driver: Any) -> list[str]:
    """The warnings and errors the page's scripts wrote to the console since it was opened."""
    return list(driver.execute_script("return window.consoleSaid"))


def runs(driver: Any) -> int:
    return int(driver.execute_script("return Number(document.body.dataset.runs || 0)"))


def open_page(driver: Any, served: Served, key: str = KEY) -> str:
    """Open the chat page, type the function key; the page's new conversation id."""
    driver.get(f"{served.base_url}/api/chat")
    wait(driver, lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "true")
    by_id(driver, "key").send_keys(key)
    return str(by_id(driver, "thread-id").text)


def send(driver: Any, text: str) -> None:
    """Type a message and press Enter; wait until its run has ended."""
    from selenium.webdriver.common.keys import Keys

    before = runs(driver)
    by_id(driver, "message").send_keys(text, Keys.ENTER)
    wait(driver, lambda d: runs(d) > before)


def answer_approval(driver: Any, label: str) -> None:
    """Press the button labelled `label` beside the pending approval; wait until the run it starts has ended."""
    before = runs(driver)
    (button,) = [item for item in css(driver, "#approval-list button") if item.accessible_name == label]
    button.click()
    wait(driver, lambda d: runs(d) > before)


def transcript(driver: Any) -> list[str]:
    return [item.text for item in css(driver, "#transcript li .text")]


def last_run_events(driver: Any) -> list[str]:
    return str(driver.execute_script("return document.body.dataset.lastRunEvents")).split()


def test_two_messages_in_one_thread_recall_each_other(driver: Any, served: Served) -> None:
    thread_id = open_page(driver, served)

    send(driver, "My order is A1.")
    send(driver, "What is my order?")
    screenshot(driver, "agui-web-recall")

    noted = "[offline model] Noted: your order is A1. (0 earlier messages in this conversation.)"
    assert transcript(driver) == ["My order is A1.", noted, "What is my order?", "[offline model] Your order is A1."]
    assert by_id(driver, "thread-id").text == thread_id
    assert by_id(driver, "error").text == ""
    assert console_said(driver) == []  # the client took every event as sent
    assert served.messages(thread_id) == [
        ("user", "My order is A1."),
        ("assistant", noted),
        ("user", "What is my order?"),
        ("assistant", "[offline model] Your order is A1."),
    ]


def test_the_answer_is_shown_delta_by_delta_as_it_streams(driver: Any, served: Served) -> None:
    thread_id = open_page(driver, served)
    driver.execute_script(
        """
        window.replyTexts = [];
        new MutationObserver(() => {
          const replies = document.querySelectorAll('#transcript li.assistant .text');
          if (replies.length) window.replyTexts.push(replies[replies.length - 1].textContent);
        }).observe(document.getElementById('transcript'), {subtree: true, childList: true, characterData: true});
        """
    )

    send(driver, "My name is Ada.")

    answer = "[offline model] Noted: your name is Ada. (0 earlier messages in this conversation.)"
    events = last_run_events(driver)
    texts = [text for text in driver.execute_script("return window.replyTexts") if text]
    assert events[0] == "RUN_STARTED" and events[-1] == "RUN_FINISHED"
    assert events.count("TEXT_MESSAGE_CONTENT") > 1
    assert events.index("TEXT_MESSAGE_END") < events.index("RUN_FINISHED")
    # The reply grew delta by delta, each text a prefix of the next, up to the stored answer.
    assert len(set(texts)) > 1 and texts[-1] == answer
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    assert served.messages(thread_id) == [("user", "My name is Ada."), ("assistant", answer)]
    assert console_said(driver) == []


def test_an_approved_tool_runs_once_and_the_model_goes_on(driver: Any, served: Served) -> None:
    thread_id = open_page(driver, served)

    send(driver, "use refund_order order_id=A1")
    asking = [item.text for item in css(driver, "#approval-list li")]
    asked_events = last_run_events(driver)
    screenshot(driver, "agui-web-approval")
    answer_approval(driver, f"Approve {REFUND_CALL}")

    assert asking == [f"Approve running refund_order?\n{REFUND_CALL}\nApprove\nReject"]
    assert asked_events == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "CUSTOM",
        "RUN_FINISHED",
    ]
    assert last_run_events(driver)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert transcript(driver) == [
        "use refund_order order_id=A1",
        REFUND_CALL,
        f"Approved {REFUND_CALL}",
        "→ Order A1 is refunded.",
        "[offline model] The tool returned: Order A1 is refunded.",
    ]
    assert by_id(driver, "approvals").is_displayed() is False
    assert console_said(driver) == []
    assert served.get(f"{AGENT}/conversations/{thread_id}").json()["pendingApprovals"] == []
    assert served.messages(thread_id) == [
        ("user", "use refund_order order_id=A1"),
        ("assistant", ""),
        ("user", ""),
        ("tool", ""),
        ("assistant", "[offline model] The tool returned: Order A1 is refunded."),
    ]
    assert served.tool_results(thread_id) == ["Order A1 is refunded."]


def test_a_rejected_tool_does_not_run(driver: Any, served: Served) -> None:
    thread_id = open_page(driver, served)

    send(driver, "use refund_order order_id=B2")
    answer_approval(driver, 'Reject refund_order({"order_id":"B2"})')
    screenshot(driver, "agui-web-rejected")

    rejected = "Error: Tool call invocation was rejected by user."
    assert transcript(driver) == [
        "use refund_order order_id=B2",
        'refund_order({"order_id":"B2"})',
        'Rejected refund_order({"order_id":"B2"})',
        f"→ {rejected}",
        f"[offline model] The tool returned: {rejected}",
    ]
    # The call, the approval's answer and the tool's result are stored as contents, without text.
    assert served.messages(thread_id) == [
        ("user", "use refund_order order_id=B2"),
        ("assistant", ""),
        ("user", ""),
        ("tool", ""),
        ("assistant", f"[offline model] The tool returned: {rejected}"),
    ]
    assert served.tool_results(thread_id) == [rejected]
    assert console_said(driver) == []
    assert served.get(f"{AGENT}/conversations/{thread_id}").json()["pendingApprovals"] == []


def test_a_wrong_function_key_shows_the_401_and_keeps_the_message_to_send_again(driver: Any, served: Served) -> None:
    thread_id = open_page(driver, served, key="not-the-key")

    send(driver, "Hello.")
    screenshot(driver, "agui-web-wrong-key")
    refused = by_id(driver, "error").text
    said = console_said(driver)
    kept = by_id(driver, "message").get_attribute("value")
    shown_after_refusal = transcript(driver)
    conversation_after_refusal = served.get(f"{AGENT}/conversations/{thread_id}").status
    by_id(driver, "key").clear()
    by_id(driver, "key").send_keys(KEY)
    by_id(driver, "message").clear()
    send(driver, "Hello.")

    assert refused == f"401 unauthorized: {UNAUTHORIZED['error']['message']}"
    assert kept == "Hello."
    # The client logs the failed run; the console recorder (and so every `console_said(...) == []`) is working.
    body = json.dumps(UNAUTHORIZED, separators=(",", ":"))
    assert said == [f"error: Agent execution failed: Error: HTTP 401: {body}"]
    assert shown_after_refusal == []
    assert conversation_after_refusal == 404
    assert by_id(driver, "error").text == ""
    # The refused message was taken back, so the run that got through sent it once.
    assert [role for role, _ in served.messages(thread_id)] == ["user", "assistant"]
    assert served.messages(thread_id)[0] == ("user", "Hello.")


def test_the_bundle_is_served_by_name_and_nothing_else_is(served: Served, bundle: Path) -> None:
    script = served.get("/api/chat/main.js")
    page = served.get("/api/chat")
    names = ("nope.js", "index.html", "..%2Findex.html", "..%2F..%2Ffunction_app.py", "%2E%2E%2Fpackage.json")
    refused = {name: served.get(f"/api/chat/{name}") for name in names}

    assert script.status == 200 and script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.body == (bundle / "main.js").read_bytes()
    assert page.status == 200 and page.body == (WEB_DIR / "index.html").read_bytes()
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for name, reply in refused.items():
        assert reply.status == 404, name
        assert reply.json()["error"]["code"] == "asset_not_found", name
        assert b"<html" not in reply.body and b"import" not in reply.body and b"esbuild" not in reply.body


def test_before_the_bundle_is_built_the_page_is_503_page_not_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unbuilt = tmp_path / "agui_web"
    (unbuilt / "web").mkdir(parents=True)
    shutil.copy(SAMPLE_DIR / "function_app.py", unbuilt)
    shutil.copy(WEB_DIR / "index.html", unbuilt / "web")
    for name in MODEL_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    host = RunningHost(lambda: import_app(unbuilt / "function_app.py"), tmp_path / "state")
    try:
        answers = [host.request("GET", path) for path in ("/api/chat", "/api/chat/main.js")]
    finally:
        host.stop()

    for reply in answers:
        assert reply.status == 503
        assert reply.json()["error"] == {
            "code": "page_not_built",
            "message": "The page is not built yet: run `cd web && npm ci --ignore-scripts && npm run build` in "
            "samples/agui_web.",
        }


def import_app(path: Path) -> Any:
    """The app of the sample's function_app.py at `path`, imported under a name of its own."""
    spec = importlib.util.spec_from_file_location(f"agui_web_sample_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app
