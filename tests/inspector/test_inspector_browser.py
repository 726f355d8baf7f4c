"""The inspector in a real headless Chromium (Selenium, Debian's chromium and chromedriver) against the local host.

Each test leaves screenshots in tests/artifacts/ (git-ignored). Without a browser these tests skip, except under CI,
where they fail (`tests/browser.py`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import by_id, css, screenshot, start_browser, wait
from hosting import RunningHost
from inspector_apps import inspector_app


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    yield from start_browser()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[RunningHost]:
    running = RunningHost(lambda: inspector_app(tmp_path / "streams.sqlite3"), tmp_path)
    yield running
    running.stop()


def open_inspector(driver: Any, host: RunningHost, fragment: str = "") -> None:
    assert host.host is not None
    driver.set_window_size(1280, 1000)
    driver.get(f"{host.host.base_url}/api/inspector{fragment}")
    driver.execute_script("localStorage.clear()")
    driver.refresh()
    wait(driver, lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "true")
    assert by_id(driver, "error").text == ""


def turns_sent(driver: Any) -> int:
    return int(driver.execute_script("return Number(document.body.dataset.turnsSent || 0)"))


def send(driver: Any, text: str) -> None:
    """Type a message into the chat box and press Enter; wait until its turn is done and the page read it back."""
    from selenium.webdriver.common.keys import Keys

    before = turns_sent(driver)
    box = by_id(driver, "message")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)
    wait(driver, lambda d: turns_sent(d) > before)


def open_conversation(driver: Any, conversation_id: str) -> None:
    from selenium.webdriver.common.keys import Keys

    field = by_id(driver, "open-id")
    field.clear()
    field.send_keys(conversation_id, Keys.ENTER)
    wait(driver, lambda d: d.find_element("id", "conversation").is_displayed())


def test_every_control_has_a_label_and_the_regions_are_named(driver: Any, host: RunningHost) -> None:
    open_inspector(driver, host, "#agent=assistant&conversation=c1")

    unlabelled = driver.execute_script(
        """
        const named = (el) => (el.labels && el.labels.length) || el.getAttribute('aria-label')
          || el.getAttribute('aria-labelledby');
        const fields = [...document.querySelectorAll('input, select, textarea')].filter((el) => !named(el));
        const buttons = [...document.querySelectorAll('button')].filter(
          (el) => !(el.textContent.trim() || el.getAttribute('aria-label')));
        return [...fields, ...buttons].map((el) => el.outerHTML);
        """
    )
    sections = driver.execute_script(
        "return [...document.querySelectorAll('section')].filter((s) => !s.getAttribute('aria-labelledby')).length"
    )
    screenshot(driver, "inspector-loaded")

    assert unlabelled == []
    assert sections == 0
    assert by_id(driver, "status").get_attribute("role") == "status"
    assert by_id(driver, "error").get_attribute("role") == "alert"
    assert by_id(driver, "message").accessible_name == "Message"
    assert by_id(driver, "agent").get_attribute("value") == "assistant"


def test_a_message_sent_from_the_keyboard_streams_in_and_is_stored(driver: Any, host: RunningHost) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    open_inspector(driver, host, "#agent=assistant&conversation=k1")
    driver.execute_script("document.activeElement.blur()")
    # Reach the chat box with Tab alone: it must be in the keyboard order.
    for _ in range(40):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if driver.switch_to.active_element.get_attribute("id") == "message":
            break
    assert driver.switch_to.active_element.get_attribute("id") == "message"
    driver.execute_script(
        """
        window.replyTexts = [];
        new MutationObserver(() => {
          const reply = document.getElementById('live-reply');
          const text = reply && reply.querySelector('.message-text');
          if (text) window.replyTexts.push(text.textContent);
        }).observe(document.getElementById('transcript'), {subtree: true, childList: true, characterData: true});
        """
    )

    before = turns_sent(driver)
    ActionChains(driver).send_keys("My name is Ada.", Keys.ENTER).perform()
    wait(driver, lambda d: turns_sent(d) > before)
    screenshot(driver, "inspector-streamed")

    answer = "[offline model] Noted: your name is Ada. (0 earlier messages in this conversation.)"
    texts = [text for text in driver.execute_script("return window.replyTexts") if text]
    events = driver.execute_script("return document.body.dataset.lastTurnEvents").split()
    stored = host.request("GET", "/api/agents/assistant/conversations/k1/messages").json()["messages"]
    assert [message["text"] for message in stored] == ["My name is Ada.", answer]
    assert [item.text for item in css(driver, "#transcript .message .message-text")] == ["My name is Ada.", answer]
    assert events[0] == "turn.started" and events[-1] == "turn.completed"
    assert events.count("message.delta") > 1
    # The reply grew delta by delta, each text a prefix of the next, up to the stored answer.
    assert len(set(texts)) > 1 and texts[-1] == answer
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    assert driver.switch_to.active_element.get_attribute("id") == "message"


def test_a_pending_tool_is_approved_beside_the_message_that_asked(driver: Any, host: RunningHost) -> None:
    from selenium.webdriver.common.keys import Keys

    open_inspector(driver, host, "#agent=assistant&conversation=a1")
    send(driver, "use cancel_order order_id=A1")
    wait(driver, lambda d: css(d, "#transcript li.message.asks-approval"))
    screenshot(driver, "inspector-approval-pending")
    asking = css(driver, "#transcript li.message.asks-approval")[0]
    approve = asking.find_elements("css selector", ".approval-actions button")[0]
    pointer = css(driver, "#approvals li.approval a")[0]

    assert 'Waiting for approval: cancel_order(order_id: "A1")' in asking.text
    assert approve.accessible_name == 'Approve cancel_order(order_id: "A1")'
    assert pointer.text == "Answer it beside its message"
    assert pointer.get_attribute("href").endswith(f"#{asking.get_attribute('id')}")
    assert css(driver, "#approvals button") == []  # one place to answer: beside the message
    before = turns_sent(driver)
    approve.send_keys(Keys.ENTER)  # a keyboard press on the button
    wait(driver, lambda d: turns_sent(d) > before)
    screenshot(driver, "inspector-approval-done")

    transcript = [item.text for item in css(driver, "#transcript .message")]
    summary = host.request("GET", "/api/agents/assistant/conversations/a1").json()
    assert any("Order A1 is cancelled." in text for text in transcript)
    assert any('Approval granted: cancel_order(order_id: "A1")' in text for text in transcript)
    assert css(driver, "#transcript .approval-actions") == []
    assert css(driver, "#approvals li") == [] and by_id(driver, "no-approvals").is_displayed()
    assert summary["pendingApprovals"] == []


def test_a_deleted_conversation_is_shown_as_deleted(driver: Any, host: RunningHost) -> None:
    open_inspector(driver, host, "#agent=assistant&conversation=d1")
    send(driver, "My name is Ada.")
    assert host.request("DELETE", "/api/agents/assistant/conversations/d1").status in (202, 204)
    open_conversation(driver, "d1")
    wait(driver, lambda d: d.find_element("id", "conversation-title").text.endswith(": deleted"))
    screenshot(driver, "inspector-deleted")

    deleted_at = by_id(driver, "deleted-at")
    assert by_id(driver, "conversation-title").text == "Conversation d1 (agent assistant): deleted"
    assert deleted_at.text.endswith("with its 1 turn(s)")
    assert deleted_at.find_element("tag name", "time").get_attribute("datetime").endswith("Z")
    assert [item.text for item in css(driver, "#transcript li")] == [
        "This conversation was deleted; nothing of it is kept."
    ]
    assert by_id(driver, "error").text == ""


def test_a_failed_turn_shows_what_it_was_sent(driver: Any, host: RunningHost) -> None:
    open_inspector(driver, host, "#agent=broken&conversation=f1")
    send(driver, "Please summarise my orders.")
    screenshot(driver, "inspector-failed-turn")

    (failed,) = css(driver, "#transcript li.failed-turn")
    row = css(driver, "#turns-table tbody tr")[0]
    assert "Please summarise my orders." in failed.text
    assert "turn_failed: The agent run failed (RuntimeError)." in failed.text
    assert "Not stored in the transcript" in failed.text
    assert "turn_failed" in by_id(driver, "error").text
    assert "sent: Please summarise my orders." in row.text
    assert host.request("GET", "/api/agents/broken/conversations/f1/messages").json()["messages"] == []


def test_ids_and_times_are_shown_short_and_readable_with_the_exact_values_at_hand(
    driver: Any, host: RunningHost
) -> None:
    open_inspector(driver, host, "#agent=assistant&conversation=t1")
    send(driver, "My name is Ada.")
    stored = host.request("GET", "/api/inspector/agents/assistant/conversations/t1").json()
    turn_id = stored["turns"][0]["turnId"]

    row = css(driver, "#turns-table tbody tr")[0]
    shown_id = row.find_element("css selector", "th .id")
    completed = row.find_element("css selector", "time")
    message_time = css(driver, "#transcript li.message .message-head time")[0]

    assert shown_id.text == f"{turn_id[:8]}\u2026{turn_id[-4:]}" and shown_id.get_attribute("title") == turn_id
    assert completed.get_attribute("datetime") == stored["turns"][0]["completedAt"]
    for time in (completed, message_time):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT.*Z", time.get_attribute("datetime"))
        assert "T" not in time.text.replace("PM", "").replace("AM", "") and "Z" not in time.text
        assert "2026" in time.text or str(int(time.get_attribute("datetime")[:4])) in time.text


def test_retention_is_changed_from_its_form_and_the_chart_shows_the_budget(driver: Any, host: RunningHost) -> None:
    from selenium.webdriver.support.ui import Select

    open_inspector(driver, host, "#agent=assistant&conversation=r1")
    send(driver, "My name is Ada.")
    Select(by_id(driver, "retention-mode")).select_by_value("follow_compaction")
    for field, value in (("retention-budget", "8192"), ("retention-high", "0.9"), ("retention-low", "0.6")):
        by_id(driver, field).clear()
        by_id(driver, field).send_keys(value)
    css(driver, "#retention-form button[type=submit]")[0].click()
    wait(driver, lambda d: "Retention is now follow_compaction" in d.find_element("id", "status").text)
    for text in ("I am a pilot.", "My city is Paris.", "My pet is Rex.", "My color is green."):
        send(driver, text)
    screenshot(driver, "inspector-retention")

    stored = host.request("GET", "/api/agents/assistant/conversations/r1").json()
    points = driver.execute_script("return document.querySelectorAll('#size-chart circle.point').length")
    budget_lines = driver.execute_script("return document.querySelectorAll('#size-chart line.budget').length")
    rows = [row.get_attribute("textContent") for row in css(driver, "#summary dd")]
    assert stored["retention"] == {
        "mode": "follow_compaction",
        "maxStateBytes": 8192,
        "highWatermark": 0.9,
        "lowWatermark": 0.6,
    }
    assert "follow_compaction, watermarks 0.6 \u2013 0.9" in rows
    assert stored["truncation"]["evictedMessages"] > 0  # follow_compaction deleted what compaction excluded
    assert f"{stored['truncation']['evictedMessages']} messages, 0 answer copies" in rows
    assert points == 5 and budget_lines == 1
    assert by_id(driver, "size-table").get_attribute("textContent").count(str(stored["stateBytes"])) == 1


def test_compaction_shows_excluded_messages_dimmed_and_summaries_linked(driver: Any, host: RunningHost) -> None:
    open_inspector(driver, host, "#agent=assistant&conversation=s1")
    for text in ("My name is Ada.", "use get_weather for Paris", "My city is Paris.", "I am a pilot."):
        send(driver, text)
    screenshot(driver, "inspector-compaction")
    screenshot(driver, "inspector-compaction-top", full_page=False)  # docs/inspector.png is this one

    excluded = css(driver, "#transcript li.message.excluded")
    summary = css(driver, "#transcript li.message.summary-message")[-1]
    links = summary.find_elements("css selector", ".links a")
    opacity = float(driver.execute_script("return getComputedStyle(arguments[0]).opacity", excluded[0]))
    assert excluded and opacity < 1
    assert "excluded: summarized" in excluded[0].text and "Summarized by:" in excluded[0].text
    assert excluded[0].get_attribute("aria-label").endswith("excluded by compaction")
    assert summary.text.count("[offline model] Summary of") == 1 and links
    target = links[0].get_attribute("textContent")
    links[0].click()
    assert driver.switch_to.active_element.get_attribute("id") == f"msg-{target}"
    by_id(driver, "show-excluded").click()  # hide them
    assert not any(item.is_displayed() for item in css(driver, "#transcript li.message.excluded"))


def test_a_narrow_window_shows_one_column_without_sideways_scrolling(driver: Any, host: RunningHost) -> None:
    open_inspector(driver, host, "#agent=assistant&conversation=n1")
    send(driver, "use get_weather for Paris")
    driver.set_window_size(400, 900)

    overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    sidebar = css(driver, "#conversations-view .sidebar")[0].rect
    content = by_id(driver, "conversation").rect
    screenshot(driver, "inspector-narrow")

    assert overflow <= 0
    assert content["y"] > sidebar["y"] and abs(content["x"] - sidebar["x"]) < 4


def test_a_workflow_run_waiting_for_a_person_is_answered_from_its_form(driver: Any, host: RunningHost) -> None:
    run = host.request("POST", "/api/workflows/review/runs", {"input": "Draft a note.", "wait": True}).json()
    open_inspector(driver, host, f"#workflow=review&run={run['runId']}")
    wait(driver, lambda d: css(d, "#requests li.request"))
    screenshot(driver, "inspector-workflow-waiting")

    request = css(driver, "#requests li.request")[0]
    field = request.find_element("css selector", "textarea")
    assert field.accessible_name.startswith("Response to ")
    assert request.find_element("css selector", "dl.fields dt").text == "draft"
    assert not request.find_element("css selector", "details.raw pre").is_displayed()
    field.send_keys("true")
    request.find_element("css selector", "button[type=submit]").click()
    wait(driver, lambda d: d.find_element("id", "run-status").text == "completed")
    screenshot(driver, "inspector-workflow-done")

    outputs = by_id(driver, "outputs").text
    # The run list is loaded again after the run view: wait until it shows the run completed too.
    listed = wait(driver, completed_run_list)
    assert '"published: ' in outputs
    assert listed == [run["runId"]]


def test_a_workflow_tool_approval_reads_as_the_tool_and_its_arguments(driver: Any, host: RunningHost) -> None:
    start = {"input": "use delete_file path=notes.txt", "wait": True, "timeoutSeconds": 20}
    run = host.request("POST", "/api/workflows/cleanup/runs", start).json()
    open_inspector(driver, host, f"#workflow=cleanup&run={run['runId']}")
    wait(driver, lambda d: css(d, "#requests li.request"))
    screenshot(driver, "inspector-workflow-tool-approval")

    request = css(driver, "#requests li.request")[0]
    what = request.find_element("css selector", ".request-what").text
    fields = [item.text for item in request.find_elements("css selector", "dl.fields > *")]
    approve = request.find_element("css selector", ".actions button")
    assert what.startswith("janitor asks to run the tool delete_file (request af-call-")
    assert fields == ["path", "notes.txt"]
    assert not request.find_element("css selector", "details.raw pre").is_displayed()  # the JSON only on demand
    assert approve.accessible_name == 'Approve delete_file(path: "notes.txt")'
    approve.click()
    wait(driver, lambda d: d.find_element("id", "run-status").text == "completed")

    assert "deleted notes.txt" in by_id(driver, "outputs").text


def completed_run_list(driver: Any) -> list[str] | None:
    """The run ids the run list shows once its first run reads completed; None before."""
    items = css(driver, "#run-list button.item")
    return [item.get_attribute("data-run") for item in items] if items and "completed" in items[0].text else None


def test_behind_a_function_key_the_page_works_with_the_key_in_its_address(driver: Any, tmp_path: Path) -> None:
    running = RunningHost(lambda: inspector_app(tmp_path / "streams.sqlite3"), tmp_path, function_key="k-123")
    try:
        running.request("POST", "/api/agents/assistant/conversations/f1/turns?code=k-123", {"message": "Hi."})
        assert running.host is not None
        driver.get(f"{running.host.base_url}/api/inspector?code=k-123#agent=assistant")
        wait(driver, lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "true")
        listed = [item.text for item in css(driver, "#conversation-list button.item")]
        # Opened with the key in the address: no prompt, and every request the page makes carries it.
        assert by_id(driver, "key-form").is_displayed() is False and listed == ["f1"]

        # The page itself needs the key too; without one the host refuses it before the app runs.
        driver.get(f"{running.host.base_url}/api/inspector")
        assert "unauthorized" in driver.find_element("tag name", "body").text
    finally:
        running.stop()
