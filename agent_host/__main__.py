"""`python -m agent_host serve`: run a function app on the local durable host, without Core Tools.
`python -m agent_host worker`: host agents on a durabletask worker and serve their HTTP API (docs/standalone-worker.md).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, NoReturn

from agent_framework.exceptions import SettingNotFoundError

from ._inspector.settings import turn_on_unless_set
from ._settings import TURN_ERROR_DETAILS_SETTING, describe_chat_client, turn_switch_on_unless_set
from ._streaming.selection import SQLITE_PREFIX, check_stream_store_setting
from ._streaming.sqlite_store import STREAMS_FILE_NAME
from ._streaming.store_errors import STREAM_STORE_SETTING

DEFAULT_APP = "function_app:app"
FUNCTION_KEY_SETTING = "AGENT_HOST_FUNCTION_KEY"
_PACKAGE_DIR = Path(__file__).resolve().parent
# Where each command's app usually lives, for the message of a module not found.
_APP_FILE = {"serve": " (where function_app.py is)"}


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the chosen command."""
    parser = argparse.ArgumentParser(prog="python -m agent_host", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="Serve the app's HTTP routes and entities on 127.0.0.1.")
    serve.add_argument("--app", default=DEFAULT_APP, help="module:attribute of the app (default: %(default)s)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=7071, help="port to listen on (default: %(default)s)")
    serve.add_argument(
        "--state-dir", type=Path, default=Path(".agent_host"), help="where entity state is kept (default: %(default)s)"
    )
    serve.add_argument(
        "--function-key",
        help="require this key (x-functions-key header or ?code=) on function-level routes, as Azure does "
        f"(default: the {FUNCTION_KEY_SETTING} setting, which local.settings.json may set)",
    )
    serve.add_argument("--log-level", default="INFO", help="logging level (default: %(default)s)")
    worker = commands.add_parser("worker", help="Host agents on a durabletask worker and serve their HTTP API.")
    worker.add_argument(
        "--app",
        required=True,
        help="module:attribute naming an agent, a list of agents, or a function taking the AgentWorker",
    )
    worker.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    worker.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    worker.add_argument(
        "--sidecar", default="localhost:4001", help="durabletask sidecar address (default: %(default)s)"
    )
    worker.add_argument("--scheduler", help="Durable Task Scheduler endpoint, in place of a sidecar")
    worker.add_argument("--taskhub", default="default", help="the scheduler's task hub (default: %(default)s)")
    worker.add_argument(
        "--no-auth",
        action="store_true",
        help="serve every request without a key (default: require Authorization: Bearer with AGENT_HOST_API_KEY)",
    )
    worker.add_argument("--log-level", default="INFO", help="logging level (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.command == "worker":
        return run_worker_command(args)

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    load_local_settings(Path.cwd() / "local.settings.json")
    name_website_host(os.environ, args.host, args.port)
    turn_on_unless_set(os.environ)  # the inspector is on under serve unless AGENT_HOST_INSPECTOR says otherwise
    # A failed turn says why under serve (secrets taken out), unless AGENT_HOST_TURN_ERROR_DETAILS says otherwise.
    turn_switch_on_unless_set(os.environ, TURN_ERROR_DETAILS_SETTING)
    use_local_stream_store(args.state_dir)
    try:
        check_stream_store_setting()  # now, not at the first streamed turn
    except ValueError as exc:
        fail(str(exc))
    # Read after local.settings.json is applied, so the setting works from there too; empty means no key.
    function_key = args.function_key or os.environ.get(FUNCTION_KEY_SETTING) or None
    host_json = Path.cwd() / "host.json"
    batch_size = max_entity_operation_batch_size(host_json)
    overridable = overridable_existing_instance_states(host_json)
    app = load_app(args.app)
    from ._local_host import (
        ListenAddressError,
        StateDirectoryInUseError,
        StorageError,
        allowed_hosts_from_settings,
        run_local_host,
    )

    try:
        run_local_host(
            app,
            state_dir=args.state_dir,
            host=args.host,
            port=args.port,
            route_prefix=route_prefix(host_json),
            function_key=function_key,
            max_batch_size=batch_size,
            banner_lines=banner(app),
            overridable_existing_instance_states=overridable,
            allowed_hosts=allowed_hosts_from_settings(),
        )
    except ListenAddressError as exc:
        fail(listen_problem(exc))
    # An emptied database, a second host on the state directory, an app the worker refuses: say which and what to do,
    # without a traceback.
    except (StorageError, StateDirectoryInUseError, ValueError) as exc:
        fail(str(exc))
    return 0


def run_worker_command(args: argparse.Namespace) -> int:
    """`worker`: the agents `--app` names on a durabletask worker, and their HTTP API, until SIGINT or SIGTERM."""
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .worker._asgi import api_key_auth
    from .worker._serve import ListenError, TaskHub, listen, run_worker

    command = "worker"
    try:
        auth = None if args.no_auth else api_key_auth()
    except ValueError as exc:
        fail(f"{exc} From the command line: --no-auth.", command)
    try:
        check_stream_store_setting()  # now, not at the first streamed turn
    except ValueError as exc:
        fail(str(exc), command)
    _, target = import_app(args.app, command)
    try:
        listener = listen(args.host, args.port)
    except ListenError as exc:
        fail(listen_problem(exc), command)
    hub = TaskHub(sidecar=args.sidecar, scheduler=args.scheduler, taskhub=args.taskhub)
    try:
        run_worker(target, hub, listener, auth=auth, log_level=args.log_level, ready=print_banner)
    except (ValueError, ConnectionError) as exc:
        fail(str(exc), command)
    return 0


def print_banner(lines: list[str]) -> None:
    """The lines that say what a command serves, on stdout at once."""
    print("\n".join(lines), flush=True)


def fail(message: str, command: str = "serve") -> NoReturn:
    """End the command with one line on stderr (exit status 1), instead of a traceback."""
    raise SystemExit(f"agent_host {command}: {message}")


def listen_problem(exc: OSError) -> str:
    """What to do when the public address cannot be bound, naming the flag that changes it."""
    host, port = getattr(exc, "host", "?"), getattr(exc, "port", "?")
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (another serve, or func start?). Stop that process, or choose "
            "another port with --port."
        )
    if exc.errno == errno.EACCES:
        return f"this user may not listen on port {port} (ports below 1024 need privileges); choose one with --port."
    return f"cannot listen on {host}:{port} ({exc.strerror}); check --host (an address of this machine) and --port."


def load_local_settings(path: Path) -> None:
    """Apply `Values` from local.settings.json like `func start` does; variables already set win.

    Without one, the template's (`local.settings.json.template`) apply: the app runs with the settings it ships with,
    `PYTHON_ENABLE_INIT_INDEXING=1` among them, until they are copied and edited.

    Raises:
        SystemExit: the file is not valid JSON (naming the line and column), or its `Values` is not an object.
    """
    if not path.exists():
        path = path.with_name(f"{path.name}.template")
    if not path.exists():
        return
    settings = read_json_object(path)
    if settings.get("IsEncrypted") is True:
        fail(f"{path} is encrypted (IsEncrypted: true), which only func can read. Run func settings decrypt first.")
    values = settings.get("Values", {})
    if not isinstance(values, dict):
        fail(f"{path}: Values must be an object of setting names and values, not {type(values).__name__}.")
    for name, value in values.items():
        os.environ.setdefault(name, str(value))


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold an object (local.settings.json, host.json).

    Raises:
        SystemExit: it is not valid JSON (with the line and column of the first mistake) or not an object.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.")
    except UnicodeDecodeError:
        fail(f"{path} is not UTF-8 text; save it as UTF-8.")
    if not isinstance(document, dict):
        fail(f"{path} must hold a JSON object ({{...}}), not {type(document).__name__}.")
    return document


def name_website_host(environ: Any, host: str, port: int) -> None:
    """Set `WEBSITE_HOSTNAME` to where serve listens unless it is set (Azure sets it to the app's host name), so a
    workflow executor's `WorkflowHitlContext` builds respond URLs that reach this host. A port of 0 is not known yet."""
    if port and not environ.get("WEBSITE_HOSTNAME"):
        environ["WEBSITE_HOSTNAME"] = f"{host}:{port}"


def use_local_stream_store(state_dir: Path) -> None:
    """Keep turn streams beside the entity store (`<state_dir>/streams.sqlite3`) unless the settings choose a store.

    Set before the app is loaded, as `local.settings.json` is; an empty setting (as the template has) chooses none.
    """
    if not os.environ.get(STREAM_STORE_SETTING):
        os.environ[STREAM_STORE_SETTING] = f"{SQLITE_PREFIX}{(state_dir / STREAMS_FILE_NAME).resolve()}"


def load_app(spec: str) -> Any:
    """Import the function app `module:attribute` from the current directory.

    Raises:
        SystemExit: as `import_app`; the module defines more than one function app.
    """
    module, app = import_app(spec)
    check_app_module(module)
    return app


def import_app(spec: str, command: str = "serve") -> tuple[ModuleType, Any]:
    """Import `module:attribute` from the current directory: the module, and the attribute.

    Raises:
        SystemExit: the spec is malformed, the module or something it imports is not found, its settings are not
            valid (a `ValueError` while it loads), or it has no such attribute: one line each.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"--app {spec!r} must look like module:attribute, e.g. {DEFAULT_APP}")
    sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        fail(missing_module_problem(spec, module_name, exc, command), command)
    except (ValueError, SettingNotFoundError) as exc:  # configuration mistakes raise these at startup
        logging.getLogger(__name__).debug("loading %s failed", module_name, exc_info=exc)
        place = where_raised(exc.__traceback__)
        fail(f"{exc} (raised at {place} while loading {module_name}; --log-level DEBUG shows the traceback)", command)
    try:
        return module, getattr(module, attribute)
    except AttributeError:
        raise SystemExit(f"Module {module_name!r} has no attribute {attribute!r}.") from None


def check_app_module(module: Any) -> None:
    """Refuse a module the Python worker would refuse; warn when the worker would load another file.

    Raises:
        SystemExit: the module defines more than one function app.
    """
    from ._local_host.app_module import refuse_second_app, script_file_warning

    try:
        refuse_second_app(module)
    except ValueError as exc:
        fail(str(exc))
    warning = script_file_warning(module, Path.cwd())
    if warning is not None:
        logging.getLogger("agent_host.serve").warning("%s", warning)


def missing_module_problem(spec: str, module_name: str, exc: ModuleNotFoundError, command: str = "serve") -> str:
    """Where `--app`'s module was looked for, or which of its imports is not installed."""
    missing = exc.name or ""
    if missing and module_name != missing and not module_name.startswith(f"{missing}."):
        return (
            f"{module_name} imports {missing!r}, which is not installed in this Python ({sys.executable}). Install the "
            f"app's requirements: {sys.executable} -m pip install -r requirements.txt"
        )
    python_path = os.environ.get("PYTHONPATH") or "not set"
    return (
        f"--app {spec}: there is no module {module_name!r} in the working directory ({Path.cwd()}) or on PYTHONPATH "
        f"({python_path}). Run {command} from the app's folder{_APP_FILE.get(command, '')}, or name the module with "
        "--app."
    )


def where_raised(trace: TracebackType | None) -> str:
    """`file:line` of the innermost frame of the app's own code: not this package, an installed one or the import
    machinery."""
    place = "an unknown place"
    for frame in traceback.extract_tb(trace):
        path = Path(frame.filename)
        installed = any(part in ("site-packages", "dist-packages") for part in path.parts)
        if not (frame.filename.startswith("<") or installed or _PACKAGE_DIR in path.parents):
            place = f"{frame.filename}:{frame.lineno}"
    return place


def route_prefix(host_json: Path) -> str:
    """The HTTP route prefix from host.json (`extensions.http.routePrefix`), `api` by default."""
    return str(host_extension(host_json, "http").get("routePrefix", "api"))


def max_entity_operation_batch_size(host_json: Path) -> int:
    """Most entity operations run and committed together: `extensions.durableTask.maxEntityOperationBatchSize`.

    Without the setting, the Durable extension's own default on the Consumption plan (50, as the published host.json
    schema says), so the local host batches as a deployed app with the same host.json would.

    Raises:
        SystemExit: the setting is not a whole number of at least 1.
    """
    from ._local_host import DEFAULT_MAX_BATCH_SIZE

    value = host_extension(host_json, "durableTask").get("maxEntityOperationBatchSize", DEFAULT_MAX_BATCH_SIZE)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SystemExit(
            f"{host_json}: extensions.durableTask.maxEntityOperationBatchSize must be a whole number of at least 1 "
            f"(1 commits each entity operation on its own), not {value!r}."
        )
    return value


def overridable_existing_instance_states(host_json: Path) -> str:
    """Which existing orchestration instances a start with their id replaces:
    `extensions.durableTask.overridableExistingInstanceStates`, `NonRunningStates` (the extension's default) unless set.

    Raises:
        SystemExit: the setting is neither `NonRunningStates` nor `AnyState`.
    """
    from ._local_host.orchestration_api import NON_RUNNING_STATES, OVERRIDABLE_STATES, overridable_statuses

    value = host_extension(host_json, "durableTask").get("overridableExistingInstanceStates", NON_RUNNING_STATES)
    try:
        overridable_statuses(value)
    except ValueError:
        raise SystemExit(
            f"{host_json}: extensions.durableTask.overridableExistingInstanceStates must be "
            f"{' or '.join(OVERRIDABLE_STATES)} (NonRunningStates, the default, refuses to start the id of a running "
            f"orchestration), not {value!r}."
        ) from None
    return str(value)


def host_extension(host_json: Path, name: str) -> dict[str, Any]:
    """One section of host.json's `extensions` (`http`, `durableTask`, ...); empty when the file or it is absent."""
    if not host_json.exists():
        return {}
    extensions = read_json_object(host_json).get("extensions", {})
    section = extensions.get(name, {}) if isinstance(extensions, dict) else {}
    return section if isinstance(section, dict) else {}


def banner(app: Any) -> list[str]:
    """Lines that say which agents and models the app serves."""
    agents = getattr(app, "agents", {})
    lines = [
        f"Agent '{name}': {describe_chat_client(getattr(agent, 'client', None))}" for name, agent in agents.items()
    ]
    if getattr(app, "inspector", False):
        lines.append("Inspector: open /api/inspector in a browser (AGENT_HOST_INSPECTOR=0 turns it off)")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
