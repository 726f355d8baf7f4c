"""Contract: host.json and local.settings.json.template match their published schemas and what the code reads.

Every app setting the code reads is in the template and in docs/configuration.md's table; every template entry
is read by the code, referenced from host.json, or is one of the few the Functions host itself reads.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "tests" / "data" / "schemas"
HOST_JSON = ROOT / "host.json"
TEMPLATE = ROOT / "local.settings.json.template"
CONFIGURATION = ROOT / "docs" / "configuration.md"
CODE = [ROOT / "function_app.py", *sorted((ROOT / "agent_host").rglob("*.py"))]

# Settings in the template that no Python code here reads: the Functions host (or its extensions) reads them.
HOST_SETTINGS = {
    "FUNCTIONS_WORKER_RUNTIME": "the host starts the Python worker",
    "AzureWebJobsStorage": "the host and the Durable Functions extension keep their state there",
    "AzureWebJobsFeatureFlags": "EnableWorkerIndexing turns on the v2 programming model on older hosts",
    "PYTHON_ENABLE_INIT_INDEXING": "the Python worker indexes the app at start, which HTTP streams need",
    "PYTHON_ISOLATE_WORKER_DEPENDENCIES": "Core Tools' worker loads the app's azure-functions, not its own bundled one",
}
# Environment variables the code reads that are not app settings: the template need not list them.
NOT_APP_SETTINGS = {"PYTHONPATH": "Python's module path, which serve names when --app's module is not found"}
# Set by the Functions host itself wherever the app runs, so no template offers them.
PLATFORM_SETTINGS = {"AzureWebJobsScriptRoot": "the app's folder (the host.json a WorkflowHitlContext reads)"}
_ENVIRONMENT_NAMES = {"env", "environ"}


def load_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def schema_errors(document: dict, schema_file: str) -> list[str]:
    validator = jsonschema.Draft4Validator(load_json(SCHEMAS / schema_file))
    return [error.message for error in validator.iter_errors(document)]


def best_error(document: dict, schema_file: str) -> str:
    validator = jsonschema.Draft4Validator(load_json(SCHEMAS / schema_file))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    return "" if error is None else error.message


def _is_environment(node: ast.AST) -> bool:
    """`os.environ`, or a local called `env`/`environ` (the mappings the settings code reads)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id in _ENVIRONMENT_NAMES


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` assignments."""
    constants: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
            for target in statement.targets:
                if isinstance(target, ast.Name) and isinstance(statement.value.value, str):
                    constants[target.id] = statement.value.value
    return constants


def settings_read_by_code() -> dict[str, list[str]]:
    """Every setting name the code reads from the environment, with where.

    Recognised reads: `env.get(X)`, `env[X]`, `os.environ.get(X)`, `os.getenv(X)`, and calls that take the
    environment mapping and a name (`_number(env, X, ...)`); X is a literal or a module constant (also one
    imported from another scanned module).
    """
    trees = {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in CODE}
    constants: dict[str, str] = {}
    for tree in trees.values():
        constants.update(_string_constants(tree))

    def resolve(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            candidates: list[ast.AST] = []
            if isinstance(node, ast.Subscript) and _is_environment(node.value):
                candidates = [node.slice]
            elif isinstance(node, ast.Call):
                function = node.func
                if isinstance(function, ast.Attribute) and function.attr in ("get", "pop", "setdefault"):
                    if _is_environment(function.value) and node.args:
                        candidates = [node.args[0]]
                elif isinstance(function, ast.Attribute) and function.attr == "getenv" and node.args:
                    candidates = [node.args[0]]
                if any(_is_environment(argument) for argument in node.args):
                    candidates += [a for a in node.args if not _is_environment(a)]
            for candidate in candidates:
                name = resolve(candidate)
                if name is not None and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
                    found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def host_json_references() -> set[str]:
    """App settings host.json reads through `%NAME%`."""
    return set(re.findall(r"%([A-Za-z0-9_]+)%", HOST_JSON.read_text(encoding="utf-8")))


def documented_settings() -> list[str]:
    """The setting names in the "App settings" table of docs/configuration.md."""
    text = CONFIGURATION.read_text(encoding="utf-8")
    section = text.split("\n## App settings\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\|\s*`([^`]+)`\s*\|", section, flags=re.MULTILINE)


def test_host_json_is_valid_against_the_published_schema() -> None:
    assert schema_errors(load_json(HOST_JSON), "host.schema.json") == []


@pytest.mark.parametrize(
    ("path", "value", "complaint"),
    [
        (("extensions", "durableTask", "hubNme"), "%TASKHUB_NAME%", "hubNme"),
        (("extensions", "http", "routePrefix"), 5, "is not of type 'string'"),
        (("version",), "3.0", "is not one of"),
    ],
    ids=["misspelt-hub-name", "prefix-not-a-string", "unknown-version"],
)
def test_the_host_json_schema_rejects_what_the_host_would(path: tuple[str, ...], value: object, complaint: str) -> None:
    document = copy.deepcopy(load_json(HOST_JSON))
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value

    assert schema_errors(document, "host.schema.json") != []
    assert complaint in best_error(document, "host.schema.json")


def test_host_json_takes_the_task_hub_from_an_app_setting_and_uses_extension_bundle_v4() -> None:
    config = load_json(HOST_JSON)

    assert config["extensions"]["durableTask"]["hubName"] == "%TASKHUB_NAME%"
    # 4.32.0 is the first bundle with the Durable Task Scheduler provider; both backends deploy this bundle.
    assert config["extensionBundle"] == {
        "id": "Microsoft.Azure.Functions.ExtensionBundle",
        "version": "[4.32.0, 5.0.0)",
    }


def test_local_settings_template_is_valid_against_the_published_schema() -> None:
    assert schema_errors(load_json(TEMPLATE), "local.settings.schema.json") == []


def test_the_local_settings_schema_rejects_a_wrong_worker_runtime() -> None:
    document = load_json(TEMPLATE)
    document["Values"]["FUNCTIONS_WORKER_RUNTIME"] = "python3"

    assert "is not one of" in best_error(document, "local.settings.schema.json")


def test_template_values_are_strings_with_names_the_host_allows() -> None:
    values = load_json(TEMPLATE)["Values"]

    # The schema's own description: values must be strings; names may contain neither ':' nor '__'.
    assert {name: value for name, value in values.items() if not isinstance(value, str)} == {}
    assert [name for name in values if ":" in name or "__" in name] == []
    assert values["FUNCTIONS_WORKER_RUNTIME"] == "python"


def test_the_scan_finds_the_settings_the_host_package_is_known_to_read() -> None:
    read = settings_read_by_code()

    assert {"AZURE_OPENAI_ENDPOINT", "OPENAI_BASE_URL", "AGENT_HOST_MAX_STATE_BYTES"} <= set(read)


def test_every_setting_the_code_reads_is_in_the_template() -> None:
    template = set(load_json(TEMPLATE)["Values"])

    missing = {
        name: where
        for name, where in settings_read_by_code().items()
        if name not in template and name not in NOT_APP_SETTINGS and name not in PLATFORM_SETTINGS
    }

    assert missing == {}
    assert host_json_references() <= template


def test_every_template_setting_is_read_by_someone() -> None:
    used = set(settings_read_by_code()) | host_json_references() | set(HOST_SETTINGS)

    assert sorted(set(load_json(TEMPLATE)["Values"]) - used) == []


def test_every_template_setting_is_documented_once_in_the_configuration_page() -> None:
    documented = documented_settings()

    assert sorted(set(load_json(TEMPLATE)["Values"]) - set(documented)) == []
    assert len(documented) == len(set(documented))
