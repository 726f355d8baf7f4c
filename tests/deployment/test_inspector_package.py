"""Contract: the inspector's page ships in the deployment package, and the page a deployed app serves is whole."""

from __future__ import annotations

import zipfile
from pathlib import Path

from deployment_package import build_zip

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "agent_host" / "_inspector" / "static"


def test_every_file_of_the_page_is_in_the_package(tmp_path: Path) -> None:
    build_zip(ROOT, tmp_path / "app.zip")

    with zipfile.ZipFile(tmp_path / "app.zip") as archive:
        names = set(archive.namelist())

    shipped = {path.relative_to(ROOT).as_posix() for path in STATIC.iterdir()}
    assert shipped == {
        "agent_host/_inspector/static/inspector.html",
        "agent_host/_inspector/static/inspector.css",
        "agent_host/_inspector/static/inspector.js",
    }
    assert shipped <= names
