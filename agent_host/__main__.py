"""`python -m agent_host serve`: run a function app on the local durable host, without Core Tools."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from ._inspector.settings import turn_on_unless_set
from ._settings import describe_chat_client
from ._streaming.selection import SQLITE_PREFIX
from ._streaming.sqlite_store import STREAMS_FILE_NAME
from ._streaming.store_errors import STREAM_STORE_SETTING

DEFAULT_APP = "function_app:app"
FUNCTION_KEY_SETTING = "AGENT_HOST_FUNCTION_KEY"


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
    args = parser.parse_args(argv)

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    load_local_settings(Path.cwd() / "local.settings.json")
    name_website_host(os.environ, args.host, args.port)
    turn_on_unless_set(os.environ)  # the inspector is on under serve unless AGENT_HOST_INSPECTOR says otherwise
    use_local_stream_store(args.state_dir)
    # Read after local.settings.json is applied, so the setting works from there too; empty means no key.
    function_key = args.function_key or os.environ.get(FUNCTION_KEY_SETTING) or None
    host_json = Path.cwd() / "host.json"
    batch_size = max_entity_operation_batch_size(host_json)
    overridable = overridable_existing_instance_states(host_json)
    app = load_app(args.app)
    from ._local_host import StorageError, run_local_host

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
        )
    except StorageError as exc:  # e.g. an emptied database: say which file and what to do, without a traceback
        raise SystemExit(f"agent_host serve: {exc}") from None
    return 0


def load_local_settings(path: Path) -> None:
    """Apply `Values` from local.settings.json like `func start` does; variables already set win."""
    if not path.exists():
        return
    values: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")).get("Values", {})
    for name, value in values.items():
        os.environ.setdefault(name, str(value))


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
    """Import `module:attribute` from the current directory.

    Raises:
        SystemExit: the spec is malformed or the module has no such attribute.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"--app {spec!r} must look like module:attribute, e.g. {DEFAULT_APP}")
    sys.path.insert(0, str(Path.cwd()))
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise SystemExit(f"Module {module_name!r} has no attribute {attribute!r}.") from None


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
    config = json.loads(host_json.read_text(encoding="utf-8"))
    section = config.get("extensions", {}).get(name, {})
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
