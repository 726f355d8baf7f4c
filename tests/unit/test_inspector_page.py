"""The inspector's page and its switch: the assembled document, its policy, the setting's values."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest

from agent_host._inspector import page as page_module
from agent_host._inspector.page import inspector_page
from agent_host._inspector.settings import INSPECTOR_SETTING, inspector_from_settings, turn_on_unless_set


class Fields(HTMLParser):
    """Collects the ids of form fields and the `for` of labels."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str] = []
        self.labelled: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag in ("input", "select", "textarea"):
            self.fields.append(named.get("id") or "")
        if tag == "label" and named.get("for"):
            self.labelled.add(named["for"] or "")


def test_the_page_inlines_its_files_and_its_policy_allows_exactly_them() -> None:
    page = inspector_page()

    html = page.html.decode("utf-8")
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    assert script is not None and "/*inspector.js*/" not in html and "/*inspector.css*/" not in html
    digest = base64.b64encode(hashlib.sha256(script[1].encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page.headers["Content-Security-Policy"]
    assert page.headers["Referrer-Policy"] == "no-referrer"


def test_every_field_of_the_page_has_a_label() -> None:
    parser = Fields()
    parser.feed(inspector_page().html.decode("utf-8"))

    assert parser.fields and [field for field in parser.fields if field not in parser.labelled] == []


def test_a_file_that_would_close_its_element_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class Packaged:
        def __init__(self, texts: dict[str, str]) -> None:
            self.texts = texts

        def joinpath(self, name: str) -> Packaged:
            return Packaged({"": self.texts[name]}) if name in self.texts else self

        def read_text(self, encoding: str) -> str:
            return self.texts[""]

    files = {
        "inspector.html": "<style>/*inspector.css*/</style><script>/*inspector.js*/</script>",
        "inspector.css": "",
        "inspector.js": "const a = '</SCRIPT>';",
    }
    monkeypatch.setattr(page_module.resources, "files", lambda package: Packaged(files))
    page_module.inspector_page.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=re.escape("inspector.js contains '</script'")):
            page_module.inspector_page()
    finally:
        page_module.inspector_page.cache_clear()


@pytest.mark.parametrize(
    ("value", "on"),
    [
        (None, False),
        ("", False),
        ("0", False),
        ("off", False),
        ("No", False),
        ("1", True),
        ("true", True),
        (" ON ", True),
    ],
)
def test_the_setting_reads_as_a_switch(value: str | None, on: bool) -> None:
    environ = {} if value is None else {INSPECTOR_SETTING: value}

    assert inspector_from_settings(environ) is on


def test_a_setting_that_is_no_switch_stops_the_app_naming_it() -> None:
    with pytest.raises(ValueError, match="AGENT_HOST_INSPECTOR='maybe' is not a switch"):
        inspector_from_settings({INSPECTOR_SETTING: "maybe"})


@pytest.mark.parametrize(("before", "after"), [(None, "1"), ("", "1"), ("0", "0"), ("1", "1")])
def test_serve_turns_it_on_unless_it_is_set(before: str | None, after: str) -> None:
    environ = {} if before is None else {INSPECTOR_SETTING: before}

    turn_on_unless_set(environ)

    assert environ[INSPECTOR_SETTING] == after


def test_the_size_series_is_each_kept_turns_starting_size_then_the_size_now() -> None:
    from agent_host._conversation.state import encode_state
    from agent_host._conversation.view import ConversationView
    from agent_host._inspector.views import size_series

    state = {
        "updatedAt": 30,
        "turns": {
            "b": {"status": "completed", "at": 20, "stateBytes": 900},
            "a": {"status": "completed", "at": 10, "stateBytes": 400},
            "c": {"status": "failed", "at": 25},
        },
    }

    series = size_series(ConversationView(state))

    assert [(point["turnId"], point["stateBytes"]) for point in series] == [
        ("a", 400),
        ("b", 900),
        (None, len(encode_state(state).encode("utf-8"))),
    ]
