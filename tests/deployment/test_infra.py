"""Contract: azure.yaml and infra/ (Bicep for `azd up`) are well formed, wired together, and keyless.

Checked without the Bicep compiler (not installable here): syntax with the tree-sitter Bicep grammar; every
param and var used and every name defined; module paths, params and outputs matched across files;
main.parameters.json and azure.yaml against main.bicep; and the security-relevant content (identity-based
storage and scheduler connections, no keys, the role assignments, the app settings the app reads), for both
Durable Functions backends. Resource types and API versions are compared with the ones Microsoft documents.
Not checked: types and property names against Azure's schemas, and whether a deployment succeeds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from backend_hook import load_hook
from bicep_source import BicepFile, object_properties, string_value
from test_settings_files import HOST_SETTINGS, load_json, settings_read_by_code

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
BICEP_FILES = sorted(INFRA.rglob("*.bicep"))
# The samples' Bicep (samples/container_apps_dts) gets the grammar and wiring checks too; the rest is the template's.
CHECKED_BICEP_FILES = BICEP_FILES + sorted((ROOT / "samples").rglob("*.bicep"))
MAIN = INFRA / "main.bicep"
FUNCTION_APP = INFRA / "modules" / "functionapp.bicep"
SCHEDULER = INFRA / "modules" / "scheduler.bicep"
HOOK = load_hook()
BACKENDS = HOOK.BACKENDS
ROLES = {
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
    "974c5e8b-45b9-4653-ba55-5f855dd0fb88": "Storage Queue Data Contributor",
    "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3": "Storage Table Data Contributor",
    "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd": "Cognitive Services OpenAI User",
    "3913510d-42f4-4e42-8a64-420c390055eb": "Monitoring Metrics Publisher",
    # https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/integration#durable-task-data-contributor
    "0ad04412-c4d5-4796-b79c-f76d14c8d402": "Durable Task Data Contributor",
}
# The Microsoft.DurableTask API version that is generally available (specification/durabletask in
# Azure/azure-rest-api-specs, stable 2025-11-01), for the scheduler and its task hubs.
SCHEDULER_TYPES = {
    "scheduler": "Microsoft.DurableTask/schedulers@2025-11-01",
    "taskHub": "Microsoft.DurableTask/schedulers/taskHubs@2025-11-01",
}
# How functionapp.bicep picks its settings: the scheduler connection joins when main passes an endpoint.
SETTINGS_BY_BACKEND = "empty(schedulerEndpoint) ? baseSettings : union(baseSettings, schedulerSettings)"
# Bicep's own namespaces and the names its functions take without parentheses.
BUILT_INS = {"az", "sys", "true", "false", "null"}
# App settings that the Functions host, azure-identity or Application Insights read, not our code.
PLATFORM_SETTINGS = {
    "AZURE_CLIENT_ID",
    "APPLICATIONINSIGHTS_CONNECTION_STRING",
    "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
}


def parsed(path: Path) -> BicepFile:
    return BicepFile(path)


def app_settings(backend: str) -> dict[str, str]:
    """The function app's settings for one backend as written in Bicep: name to source text of the value."""
    bicep = parsed(FUNCTION_APP)
    expression = next(
        object_properties(body)["properties"].text.decode()
        for _, resource_type, body in bicep.resources()
        if resource_type == "config" and string_value(object_properties(body)["name"]) == "appsettings"
    )
    assert expression == SETTINGS_BY_BACKEND
    objects = ["baseSettings"] + (["schedulerSettings"] if backend == HOOK.DURABLE_TASK_SCHEDULER else [])
    return {key: value.text.decode() for name in objects for key, value in object_properties(bicep.value(name)).items()}


def guide_text() -> str:
    """docs/deployment.md: what a user reads before `azd up`."""
    return (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")


def test_there_is_a_main_file_and_modules() -> None:
    assert MAIN in BICEP_FILES
    assert len(BICEP_FILES) > 1


@pytest.mark.parametrize("path", CHECKED_BICEP_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_bicep_grammar_accepts_the_file(path: Path) -> None:
    assert parsed(path).syntax_errors() == []


def test_the_grammar_check_finds_an_unbalanced_brace(tmp_path: Path) -> None:
    broken = tmp_path / "broken.bicep"
    broken.write_text(MAIN.read_text(encoding="utf-8").replace("tags: tags\n}", "tags: tags\n", 1), encoding="utf-8")

    assert parsed(broken).syntax_errors() != []


@pytest.mark.parametrize("path", CHECKED_BICEP_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_param_and_var_is_used_and_every_name_is_defined(path: Path) -> None:
    bicep = parsed(path)
    declared = {d.name for d in bicep.declarations if d.kind != "output"} | bicep.local_symbols
    used = {name for name, _ in bicep.references}

    unused = [d.name for d in bicep.declarations if d.kind in ("param", "var") and d.name not in used]
    undefined = [(name, line) for name, line in bicep.references if name not in declared | BUILT_INS]

    assert unused == []
    assert undefined == []


def test_the_symbol_check_finds_an_unused_param_and_a_misspelt_name(tmp_path: Path) -> None:
    source = tmp_path / "wiring.bicep"
    source.write_text(
        "param location string\nparam unused string = 'x'\nvar name = 'a${locaton}'\noutput n string = name\n",
        encoding="utf-8",
    )
    bicep = parsed(source)

    used = {name for name, _ in bicep.references}
    declared = {d.name for d in bicep.declarations if d.kind != "output"}

    assert sorted(d.name for d in bicep.declarations if d.kind == "param" and d.name not in used) == [
        "location",
        "unused",
    ]
    assert [(name, line) for name, line in bicep.references if name not in declared] == [("locaton", 3)]


@pytest.mark.parametrize("path", CHECKED_BICEP_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_modules_exist_and_get_exactly_the_params_they_declare(path: Path) -> None:
    bicep = parsed(path)
    for module in bicep.modules:
        target_path = (path.parent / module.path).resolve()
        assert target_path.is_file(), module.path
        target = parsed(target_path)
        declared = {d.name: d for d in target.declarations if d.kind == "param"}
        required = {name for name, d in declared.items() if not d.has_default}

        assert sorted(set(module.params) - set(declared)) == [], module.name
        assert sorted(required - set(module.params)) == [], module.name


def test_module_outputs_that_main_reads_exist() -> None:
    bicep = parsed(MAIN)
    outputs = {m.name: set(parsed(MAIN.parent / m.path).names("output")) for m in bicep.modules}

    references = bicep.module_output_references()

    assert references != []
    assert [(module, name) for module, name in references if name not in outputs.get(module, set())] == []


def test_main_parameters_file_names_main_params_and_covers_the_required_ones() -> None:
    parameters = load_json(INFRA / "main.parameters.json")["parameters"]
    declared = {d.name: d for d in parsed(MAIN).declarations if d.kind == "param"}

    assert sorted(set(parameters) - set(declared)) == []
    assert sorted(name for name, d in declared.items() if not d.has_default and name not in parameters) == []
    assert parameters["environmentName"] == {"value": "${AZURE_ENV_NAME}"}
    assert parameters["location"] == {"value": "${AZURE_LOCATION}"}


def test_azure_yaml_deploys_this_folder_as_the_python_function_app_main_tags() -> None:
    config = yaml.safe_load((ROOT / "azure.yaml").read_text(encoding="utf-8"))
    function_app = next(m for m in parsed(MAIN).modules if m.name == "functionApp")

    [(service_name, service)] = config["services"].items()

    assert (service["host"], service["language"], service["project"]) == ("function", "python", ".")
    assert (ROOT / service["project"] / "function_app.py").is_file()
    assert string_value(function_app.params["serviceName"]) == service_name
    assert config["infra"] == {"provider": "bicep", "path": "infra", "module": "main"}


def test_the_app_runs_on_flex_consumption_with_a_supported_python() -> None:
    main = parsed(MAIN)
    function_app = parsed(INFRA / "modules" / "functionapp.bicep").text()
    python = next(d for d in main.declarations if d.name == "pythonVersion")
    requires = re.search(r'requires-python = ">=3\.(\d+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    assert "tier: 'FlexConsumption'" in function_app
    assert "name: 'FC1'" in function_app
    assert re.search(r"runtime: \{\s*name: 'python'\s*version: pythonVersion\s*\}", function_app)
    assert string_value(python.node.children[-1]) == "3.11"
    assert requires is not None and int(requires.group(1)) == 11


@pytest.mark.parametrize("backend", BACKENDS)
def test_storage_is_identity_based_and_no_key_is_created_or_stored(backend: str) -> None:
    settings = app_settings(backend)
    infra_text = "\n".join(path.read_text(encoding="utf-8") for path in BICEP_FILES)

    assert settings["AzureWebJobsStorage__credential"] == "'managedidentity'"
    assert {f"AzureWebJobsStorage__{kind}ServiceUri" for kind in ("blob", "queue", "table")} <= set(settings)
    assert "AzureWebJobsStorage" not in settings
    assert [name for name in settings if "KEY" in name.upper() or "SECRET" in name.upper()] == []
    assert "listKeys(" not in infra_text
    assert "allowSharedKeyAccess: false" in infra_text
    assert "disableLocalAuth: true" in infra_text
    assert "DisableLocalAuth: true" in infra_text


def test_the_app_identity_gets_the_data_roles_it_needs() -> None:
    infra_text = "\n".join(path.read_text(encoding="utf-8") for path in BICEP_FILES)

    assert {guid: name for guid, name in ROLES.items() if guid not in infra_text} == {}
    assert infra_text.count("Microsoft.Authorization/roleAssignments@") >= 6


@pytest.mark.parametrize("backend", BACKENDS)
def test_app_settings_carry_the_model_task_hub_and_identity_and_only_names_something_reads(backend: str) -> None:
    settings = app_settings(backend)
    # TASKHUB_NAME is read by host.json (hubName); the scheduler connection by the host.json the hook deploys.
    read = set(settings_read_by_code()) | {"TASKHUB_NAME", HOOK.SCHEDULER_STORAGE_PROVIDER["connectionStringName"]}

    assert settings["AZURE_OPENAI_ENDPOINT"] == "openAiEndpoint"
    assert settings["AZURE_OPENAI_CHAT_MODEL"] == "chatDeploymentName"
    assert settings["TASKHUB_NAME"] == "taskHubName"
    assert settings["AZURE_CLIENT_ID"] == "identityClientId"
    # Flex Consumption refuses these as app settings; the runtime is set in functionAppConfig instead.
    assert {"FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION"}.isdisjoint(settings)
    unknown = [
        name
        for name in settings
        if name not in read | PLATFORM_SETTINGS | set(HOST_SETTINGS) and not name.startswith("AzureWebJobsStorage__")
    ]
    assert unknown == []


def test_task_hub_default_is_a_valid_durable_task_hub_name() -> None:
    task_hub = next(d for d in parsed(MAIN).declarations if d.name == "taskHubName")
    default = string_value(task_hub.node.children[-1])

    assert default is not None and re.fullmatch(r"[A-Za-z][A-Za-z0-9]{2,44}", default)
    assert default == json.loads((ROOT / "local.settings.json.template").read_text())["Values"]["TASKHUB_NAME"]


def test_the_deployment_guide_matches_the_bicep_defaults_and_settings() -> None:
    guide = guide_text()
    defaults = {d.name: string_value(d.node.children[-1]) for d in parsed(MAIN).declarations if d.has_default}
    named = [
        name
        for backend in BACKENDS
        for name in app_settings(backend)
        if not name.startswith(("AzureWebJobsStorage__", "APPLICATIONINSIGHTS_"))
    ]

    assert [name for name in named if f"`{name}" not in guide] == []
    assert f"`{defaults['chatModelName']}` {defaults['chatModelVersion']}" in guide
    assert f"deployment `{defaults['chatDeploymentName']}`" in guide
    assert all(role in guide for role in ROLES.values() if role != "Monitoring Metrics Publisher")


def test_one_parameter_chooses_the_backend_for_bicep_and_for_the_packaged_host_json() -> None:
    main = parsed(MAIN)
    parameters = load_json(INFRA / "main.parameters.json")["parameters"]
    function_app = next(m for m in main.modules if m.name == "functionApp")
    scheduler = next(m for m in main.modules if m.name == "scheduler")

    assert main.allowed_values("durableBackend") == list(BACKENDS)
    assert string_value(main.value("durableBackend")) == HOOK.DEFAULT_BACKEND
    # azd fills the parameter from the environment value the package hook reads, with the same default.
    assert parameters["durableBackend"] == {"value": f"${{{HOOK.BACKEND_VARIABLE}={HOOK.DEFAULT_BACKEND}}}"}
    assert main.value("useScheduler").text.decode() == f"durableBackend == '{HOOK.DURABLE_TASK_SCHEDULER}'"
    assert scheduler.condition == "useScheduler"
    assert function_app.params["schedulerEndpoint"].text.decode() == "useScheduler ? scheduler.outputs.endpoint : ''"
    assert main.value("DURABLE_BACKEND").text.decode() == "durableBackend"


def test_the_scheduler_backend_gets_a_scheduler_and_task_hub_with_the_data_role_on_the_hub() -> None:
    module = parsed(SCHEDULER)
    main = parsed(MAIN)
    resources = {symbol: (resource_type, object_properties(body)) for symbol, resource_type, body in module.resources()}
    scheduler = next(m for m in main.modules if m.name == "scheduler")
    app_role = resources["appRole"][1]
    role_properties = object_properties(app_role["properties"])

    assert {symbol: resources[symbol][0] for symbol in SCHEDULER_TYPES} == SCHEDULER_TYPES
    assert resources["taskHub"][1]["parent"].text.decode() == "scheduler"
    # The Functions app finds its hub by TASKHUB_NAME, so the hub must carry that very name.
    assert resources["taskHub"][1]["name"].text.decode() == "taskHubName"
    assert scheduler.params["taskHubName"].text.decode() == "taskHubName"
    assert string_value(module.value("durableTaskDataContributor")) == "0ad04412-c4d5-4796-b79c-f76d14c8d402"
    assert app_role["scope"].text.decode() == "taskHub"
    assert role_properties["principalId"].text.decode() == "appPrincipalId"
    assert string_value(role_properties["principalType"]) == "ServicePrincipal"
    assert scheduler.params["appPrincipalId"].text.decode() == "identity.outputs.principalId"
    assert "durableTaskDataContributor" in role_properties["roleDefinitionId"].text.decode()
    # An empty allow list lets nobody reach the scheduler; the default lets the app in (RBAC still applies).
    assert [string_value(n) for n in main.value("durableTaskSchedulerIpAllowlist").named_children] == ["0.0.0.0/0"]
    assert main.allowed_values("durableTaskSchedulerSku") == ["Consumption", "Dedicated"]
    assert string_value(main.value("durableTaskSchedulerSku")) == "Consumption"


def test_the_scheduler_connection_is_identity_based_and_set_only_for_the_scheduler_backend() -> None:
    setting = HOOK.SCHEDULER_STORAGE_PROVIDER["connectionStringName"]

    on_scheduler = app_settings(HOOK.DURABLE_TASK_SCHEDULER)
    on_storage = app_settings(HOOK.AZURE_STORAGE)

    # The documented identity-based form: endpoint, managed identity, the user-assigned identity's client id.
    assert on_scheduler[setting] == (
        "'Endpoint=${schedulerEndpoint};Authentication=ManagedIdentity;ClientID=${identityClientId}'"
    )
    assert setting not in on_storage
    assert set(on_scheduler) - set(on_storage) == {setting}
    assert on_scheduler["TASKHUB_NAME"] == on_storage["TASKHUB_NAME"] == "taskHubName"


def test_flex_consumption_keeps_an_instance_of_the_durable_group_ready() -> None:
    function_app = parsed(FUNCTION_APP)
    main = parsed(MAIN)
    passed = next(m for m in main.modules if m.name == "functionApp").params
    choice = function_app.value("alwaysReady")
    [group] = choice.named_children[1].named_children
    group_properties = object_properties(group)

    assert choice.type == "ternary_expression"
    assert choice.named_children[0].text.decode() == "durableAlwaysReadyInstances > 0"
    assert choice.named_children[-1].text.decode() == "[]"
    assert string_value(group_properties["name"]) == "durable"
    assert group_properties["instanceCount"].text.decode() == "durableAlwaysReadyInstances"
    assert re.search(r"scaleAndConcurrency: \{[^}]*alwaysReady: alwaysReady", function_app.text())
    assert main.value("durableAlwaysReadyInstances").text.decode() == "1"
    assert passed["durableAlwaysReadyInstances"].text.decode() == "durableAlwaysReadyInstances"


def test_azure_yaml_writes_the_backend_host_json_around_packaging_on_every_shell() -> None:
    service = yaml.safe_load((ROOT / "azure.yaml").read_text(encoding="utf-8"))["services"]["api"]
    hooks = service["hooks"]
    script = Path(HOOK.__file__).relative_to(ROOT).as_posix()

    assert set(hooks) == {"prepackage", "postpackage"}
    for event, command in (("prepackage", "apply"), ("postpackage", "restore")):
        assert hooks[event]["posix"] == {"shell": "sh", "run": f"python3 {script} {command}"}
        assert hooks[event]["windows"] == {"shell": "pwsh", "run": f"python {script} {command}"}
