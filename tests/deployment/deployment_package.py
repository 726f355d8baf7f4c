"""The zip that `func azure functionapp publish` uploads, built the way Core Tools builds it, and azd's reading too.

Core Tools (`FileSystemHelpers.GetLocalFiles` + `GitIgnoreParser`, a port of the npm `gitignore-parser`) walks
the app folder, always skips folders named `.git`/`.vscode` and files named `.funcignore`, `.gitignore`,
`local.settings.json`, `project.lock.json` (at any depth), and drops every file whose `/`-separated relative
path is denied by `.funcignore`. That parser is not git's: each pattern becomes a regular expression anchored
at the start of the path and not at the end (`*` is `[^/]+`, `**` is `.+`, nothing else is special), so
`__pycache__/` only matches at the top level and `.venv*` does not match `.venv/`. azd reads the same file with
git's semantics. A `.funcignore` both tools read the same way is what the tests require.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pathspec

ALWAYS_SKIPPED_FOLDERS = frozenset({".git", ".vscode"})
ALWAYS_SKIPPED_FILES = frozenset({".funcignore", ".gitignore", "local.settings.json", "project.lock.json"})
_REGEX_SPECIALS = re.compile(r"[\-\[\]/{}()+?.\\^$|]")


class CoreToolsIgnore:
    """`.funcignore` as Core Tools reads it: `denies(path)` for a relative path with `/` separators."""

    def __init__(self, text: str) -> None:
        """Parse the file's text: trimmed lines, `#` comments, `!` negations, one leading `/` dropped."""
        positive: list[str] = []
        negative: list[str] = []
        for raw in text.split("\n"):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            line = line[1:] if line.startswith("/") else line
            (negative if negated else positive).append(self._pattern(line))
        self._positive = self._compile(positive)
        self._negative = self._compile(negative)
        self.has_negations = bool(negative)

    @staticmethod
    def _pattern(line: str) -> str:
        escaped = _REGEX_SPECIALS.sub(lambda match: "\\" + match.group(0), line)
        return escaped.replace("**", "(.+)").replace("*", "([^\\/]+)")

    @staticmethod
    def _compile(patterns: list[str]) -> re.Pattern[str] | None:
        return re.compile("^((" + ")|(".join(sorted(patterns)) + "))") if patterns else None

    def denies(self, path: str) -> bool:
        """Whether the file at `path` stays out of the package."""
        if self._negative is not None and self._negative.match(path):
            return False
        return self._positive is not None and self._positive.match(path) is not None

    def denies_folder(self, folder: str) -> bool:
        """Whether every file under `folder` is denied (prefix patterns make that decidable without a walk)."""
        return not self.has_negations and self.denies(folder + "/")


class GitIgnore:
    """`.funcignore` with git's semantics, as azd reads it."""

    def __init__(self, text: str) -> None:
        """Parse the file's text with gitignore rules."""
        self._spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())

    def denies(self, path: str) -> bool:
        """Whether the file at `path` stays out of the package."""
        return self._spec.match_file(path)

    def denies_folder(self, folder: str) -> bool:
        """Whether the folder itself is ignored (git then never looks inside)."""
        return self._spec.match_file(folder + "/")


def _walk(root: Path, denies: Callable[[str], bool], denies_folder: Callable[[str], bool]) -> Iterator[str]:
    for current, folders, files in os.walk(root):
        relative = Path(current).relative_to(root).as_posix()
        prefix = "" if relative == "." else relative + "/"
        folders[:] = sorted(
            name for name in folders if name.lower() not in ALWAYS_SKIPPED_FOLDERS and not denies_folder(prefix + name)
        )
        for name in sorted(files):
            path = prefix + name
            if name.lower() not in ALWAYS_SKIPPED_FILES and not denies(path):
                yield path


def package_files(root: Path, *, semantics: str = "core-tools") -> list[str]:
    """The files a publish from `root` would upload, as sorted relative paths.

    Args:
        root: The function app folder.
        semantics: `core-tools` (what `func azure functionapp publish` does) or `git` (what azd does).
    """
    ignore_file = root / ".funcignore"
    text = ignore_file.read_text(encoding="utf-8") if ignore_file.exists() else ""
    rules = CoreToolsIgnore(text) if semantics == "core-tools" else GitIgnore(text)
    return sorted(_walk(root, rules.denies, rules.denies_folder))


def build_zip(root: Path, destination: Path) -> list[str]:
    """Write the package Core Tools would upload to `destination` and return its entries."""
    files = package_files(root)
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(root / path, path)
    return files
