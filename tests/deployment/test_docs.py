"""Contract: the README links every page under docs/, every relative link resolves, and its app snippet runs.

The README's "Host your own agent" snippet is run as a function app on the local host with the offline model, so a
renamed parameter or a wrong import in it fails here rather than for a newcomer.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from hosting import RunningHost

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file, code blocks left out."""
    return _LINK.findall(_FENCE.sub("", path.read_text(encoding="utf-8")))


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings: lower case, punctuation dropped, spaces to hyphens."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_the_readme_links_every_page_under_docs() -> None:
    linked = {target.split("#", 1)[0] for target in links(README)}

    assert [page.name for page in PAGES if f"docs/{page.name}" not in linked] == []


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_names_an_existing_file_and_heading(path: Path) -> None:
    broken = []
    for target in links(path):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked)):
            broken.append(target)

    assert broken == []


def readme_app_snippet() -> str:
    """The Python block of the README's "Host your own agent" section."""
    section = README.read_text(encoding="utf-8").split("\n## Host your own agent\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


def test_the_readme_app_snippet_hosts_its_agent_with_tools_and_an_approval(tmp_path: Path, monkeypatch) -> None:
    for name in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)  # the offline model answers
    source = tmp_path / "readme_app.py"
    source.write_text(readme_app_snippet(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("readme_app", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    base = "/api/agents/support/conversations/c1/turns"

    running = RunningHost(lambda: module.app, tmp_path / "state")
    try:
        looked_up = running.request("POST", base, {"message": "Please use order_status for A1"})
        asked = running.request("POST", base, {"message": "Please use refund_order for B2"})
        approval = asked.json()["approvalRequests"][0]
        refunded = running.request("POST", base, {"approvals": [{"id": approval["id"], "approved": True}]})
    finally:
        running.stop()

    assert looked_up.json()["text"] == "[offline model] The tool returned: Order A1 ships tomorrow."
    assert (approval["toolName"], approval["arguments"]) == ("refund_order", {"order_id": "B2"})
    assert refunded.json()["text"] == "[offline model] The tool returned: Order B2 is refunded."
