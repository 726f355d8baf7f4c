"""A newcomer's mistakes with `python -m agent_host serve` end it with one line that says what to do, not a traceback.

Each test runs the real command in an app folder of its own and checks the whole of what it printed.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import hosting
import pytest
from hosting import free_port

ROOT = Path(__file__).resolve().parents[2]
# Interpreters older than 3.11 that may be installed (this machine's pyenv, Debian's); absent ones are skipped.
OLD_PYTHONS = [
    path
    for path in [*sorted(Path("/root/.pyenv/versions").glob("3.10*/bin/python")), Path("/usr/bin/python3.10")]
    if path.exists()
]


def app_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "app"
    folder.mkdir()
    shutil.copy(ROOT / "function_app.py", folder)
    shutil.copy(ROOT / "host.json", folder)
    return folder


def environment(**settings: str) -> dict[str, str]:
    return hosting.command_environment(ROOT, **settings)


def serve(folder: Path, *arguments: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run serve until it exits (each case here exits at startup)."""
    return hosting.run_command(
        folder, ["serve", "--state-dir", str(folder / ".state"), *arguments], environment(**settings)
    )


def test_a_port_in_use_names_the_port_and_the_flag(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = hosting.only_stderr_line(serve(folder, "--port", str(port)))

    assert line == (
        f"agent_host serve: port {port} on 127.0.0.1 is already in use (another serve, or func start?). Stop that "
        "process, or choose another port with --port."
    )


def test_an_app_module_that_is_not_there_says_where_serve_looked(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    line = hosting.only_stderr_line(serve(folder, "--app", "my_app:app"))

    assert line == (
        f"agent_host serve: --app my_app:app: there is no module 'my_app' in the working directory ({folder}) or on "
        f"PYTHONPATH ({environment()['PYTHONPATH']}). Run serve from the app's folder (where function_app.py is), "
        "or name the module with --app."
    )


def test_a_module_the_app_imports_that_is_not_installed_is_named(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    (folder / "needs_more.py").write_text("import agent_framework_not_installed\n", encoding="utf-8")

    line = hosting.only_stderr_line(serve(folder, "--app", "needs_more:app"))

    assert line == (
        f"agent_host serve: needs_more imports 'agent_framework_not_installed', which is not installed in this "
        f"Python ({sys.executable}). Install the app's requirements: {sys.executable} -m pip install -r "
        "requirements.txt"
    )


def test_invalid_local_settings_name_the_file_and_the_position(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    settings = folder / "local.settings.json"
    text = '{\n  "Values": {\n    "OPENAI_CHAT_MODEL": "x",\n  }\n}\n'
    settings.write_text(text, encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as mistake:  # its wording differs between Python versions
        json.loads(text)

    line = hosting.only_stderr_line(serve(folder))

    assert (mistake.value.lineno, mistake.value.colno) in ((3, 29), (4, 3))
    assert line == (
        f"agent_host serve: {settings} is not valid JSON: {mistake.value.msg} at line {mistake.value.lineno}, "
        f"column {mistake.value.colno}."
    )


def test_a_missing_model_setting_is_named_as_the_docs_name_it(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    line = hosting.only_stderr_line(serve(folder, OPENAI_API_KEY="sk-not-a-real-key"))

    assert line == (
        "agent_host serve: OPENAI_API_KEY is set, so an OpenAI-compatible model answers, but OPENAI_CHAT_MODEL is "
        "not: set OPENAI_CHAT_MODEL to its name (gpt-4o-mini, llama3.2 on Ollama). (raised at "
        f"{folder / 'function_app.py'}:38 while loading function_app; --log-level DEBUG shows the traceback)"
    )
    assert "sk-not-a-real-key" not in line


def test_an_unknown_stream_store_is_refused_at_startup(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    line = hosting.only_stderr_line(serve(folder, AGENT_HOST_STREAM_STORE="memcached://:hunter2@cache:11211"))

    assert line == (
        "agent_host serve: AGENT_HOST_STREAM_STORE must be 'sqlite:<path>', 'azure', or a redis:// or rediss:// URL; "
        "got a value starting 'memcached'."
    )


def test_a_second_serve_on_one_state_directory_is_refused_until_the_first_dies(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    first = hosting.start_serve(folder, free_port(), folder / ".state", environment())
    try:
        second = hosting.only_stderr_line(serve(folder, "--port", str(free_port())))
    finally:
        hosting.stop_serve(first, signal.SIGKILL)  # no cleanup at all: the operating system drops the lock
    hosting.stop_serve(hosting.start_serve(folder, free_port(), folder / ".state", environment()))

    assert second == (
        f"agent_host serve: Another local host (process {first.pid}) is serving the state directory "
        f"{folder / '.state'}; two hosts on one directory would run its queued work twice. Stop that one, or give "
        "this one its own --state-dir."
    )


def test_an_older_python_is_named_with_the_supported_versions() -> None:
    # As `python -m agent_host` imports the package: argv[0] is "-m" until the module is found.
    fake_old = (
        "import runpy, sys; sys.version_info = (3, 10, 12, 'final', 0); sys.argv = ['-m', 'serve']; "
        "runpy.run_module('agent_host', run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", fake_old], cwd=ROOT, env=environment(), capture_output=True, text=True, check=False
    )

    assert hosting.only_stderr_line(result) == (
        "python -m agent_host: agent-host needs Python 3.11 or newer (3.11, 3.12 and 3.13 are supported); this is "
        f"Python 3.10.12 ({sys.executable})."
    )


@pytest.mark.parametrize("python", OLD_PYTHONS or [None], ids=[str(p) for p in OLD_PYTHONS] or ["none"])
def test_a_real_older_python_gets_the_same_line(python: Path | None) -> None:
    if python is None:
        pytest.skip("no Python older than 3.11 on this machine")
    result = subprocess.run(
        [str(python), "-m", "agent_host", "serve"], cwd=ROOT, env=environment(), capture_output=True, text=True
    )

    assert hosting.only_stderr_line(result).startswith("python -m agent_host: agent-host needs Python 3.11 or newer")


def test_a_readme_names_the_supported_versions() -> None:
    assert "Python 3.11, 3.12 or 3.13" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_local_settings_values_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    settings = folder / "local.settings.json"
    settings.write_text(json.dumps({"Values": ["OPENAI_CHAT_MODEL"]}), encoding="utf-8")

    assert hosting.only_stderr_line(serve(folder)) == (
        f"agent_host serve: {settings}: Values must be an object of setting names and values, not list."
    )
