"""The Container Apps sample (samples/container_apps_dts): its Bicep, Dockerfile and README agree with what the worker
reads, its identity gets the Durable Task Data Contributor role, and the image's command hosts the sample's agent.

The Bicep is checked as test_infra.py checks the template's (the grammar and wiring checks there cover samples/ too):
without the Bicep compiler or a deployment. Docker is not run either: the test lays the files out as the Dockerfile's
COPY lines do and runs its ENTRYPOINT against durabletask's in-memory backend, with `--sidecar` where the Bicep passes
`--scheduler`, then takes two turns through `AgentClient` and reads the conversation over the served HTTP API.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import tree_sitter
from bicep_source import BicepFile, object_properties, string_value
from durabletask.client import TaskHubGrpcClient
from durabletask.testing import create_test_backend
from hosting import command_environment, free_port, request_at, start_command
from test_infra import ROLES

from agent_host import chat_client_from_settings
from agent_host._settings import AZURE_OPENAI_CHAT_MODEL, AZURE_OPENAI_ENDPOINT
from agent_host.worker import API_KEY_SETTING, AgentClient
from agent_host.worker._asgi import api_key_auth

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "container_apps_dts"
MAIN = SAMPLE / "main.bicep"
DOCKERFILE = SAMPLE / "Dockerfile"
README = SAMPLE / "README.md"
DURABLE_TASK_DATA_CONTRIBUTOR = next(guid for guid, name in ROLES.items() if name == "Durable Task Data Contributor")
# https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/containers#acrpull
ACR_PULL = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
# DefaultAzureCredential reads it to sign in as a user-assigned identity; no code of ours does.
CLIENT_ID_SETTING = "AZURE_CLIENT_ID"


def text(node: tree_sitter.Node) -> str:
    return node.text.decode() if node.text is not None else ""


def items(array: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The elements of an array literal, comments left out."""
    return [node for node in array.named_children if node.type != "comment"]


def resource(bicep: BicepFile, symbol: str) -> dict[str, tree_sitter.Node]:
    return next(object_properties(body) for name, _, body in bicep.resources() if name == symbol)


def container() -> dict[str, tree_sitter.Node]:
    """The container app's one container."""
    template = object_properties(object_properties(resource(BicepFile(MAIN), "app")["properties"])["template"])
    [only] = items(template["containers"])
    return object_properties(only)


def container_env() -> dict[str, dict[str, tree_sitter.Node]]:
    """The container's environment variables: name to the rest of the entry (`value` or `secretRef`)."""
    entries = [object_properties(entry) for entry in items(container()["env"])]
    return {string_value(entry.pop("name")) or "": entry for entry in entries}


def entrypoint() -> list[str]:
    """The Dockerfile's exec-form ENTRYPOINT."""
    [line] = re.findall(r"^ENTRYPOINT (\[.*\])$", DOCKERFILE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return json.loads(line)


def test_the_container_sets_exactly_the_settings_the_worker_and_the_agent_read() -> None:
    env = container_env()
    bicep = BicepFile(MAIN)
    app = object_properties(resource(bicep, "app")["properties"])
    [secret] = [object_properties(entry) for entry in items(object_properties(app["configuration"])["secrets"])]
    api_key = next(d for d in bicep.declarations if d.name == "apiKey")
    deployed = {name: "set" for name in env} | {AZURE_OPENAI_ENDPOINT: "https://oai-x.openai.azure.com/"}

    assert sorted(env) == sorted([API_KEY_SETTING, AZURE_OPENAI_CHAT_MODEL, AZURE_OPENAI_ENDPOINT, CLIENT_ID_SETTING])
    assert text(env[CLIENT_ID_SETTING]["value"]) == "identity.outputs.clientId"
    assert text(env[AZURE_OPENAI_ENDPOINT]["value"]) == "useAzureOpenAi ? openAi.outputs.endpoint : ''"
    assert text(env[AZURE_OPENAI_CHAT_MODEL]["value"]) == "useAzureOpenAi ? openAi.outputs.chatDeploymentName : ''"
    # The key is a container app secret from a @secure() parameter, never a plain value.
    assert set(env[API_KEY_SETTING]) == {"secretRef"}
    assert text(env[API_KEY_SETTING]["secretRef"]) == text(secret["name"]) == "apiKeySecret"
    assert text(secret["value"]) == "apiKey"
    assert api_key.node.prev_sibling is not None and "@secure()" in text(api_key.node.prev_sibling)
    # What the container gets is what the worker's auth and the agent's model need: Azure OpenAI, not the offline one.
    assert api_key_auth(deployed)({"authorization": "Bearer set"})
    assert type(chat_client_from_settings(deployed)).__name__ == "OpenAIChatClient"


def test_the_container_runs_the_images_worker_command_on_the_scheduler_and_task_hub() -> None:
    worker = container()
    bicep = BicepFile(MAIN)
    ingress = object_properties(
        object_properties(object_properties(resource(bicep, "app")["properties"])["configuration"])["ingress"]
    )
    probes = [object_properties(object_properties(probe)["httpGet"]) for probe in items(worker["probes"])]
    port = entrypoint()[entrypoint().index("--port") + 1]

    assert entrypoint() == [
        "python", "-m", "agent_host", "worker", "--app", "agents:agent", "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip
    assert [text(arg) for arg in items(worker["args"])] == [
        "'--scheduler'",
        "scheduler.outputs.endpoint",
        "'--taskhub'",
        "taskHubName",
    ]
    assert text(bicep.value("port")) == port
    assert text(ingress["targetPort"]) == "port" and text(ingress["external"]) == "true"
    assert [(string_value(probe["path"]), text(probe["port"])) for probe in probes] == [("/api/health", "port")] * 2


def test_the_identity_gets_the_durable_task_data_contributor_role_and_the_app_runs_as_it() -> None:
    bicep = BicepFile(MAIN)
    scheduler = next(module for module in bicep.modules if module.name == "scheduler")
    scheduler_bicep = BicepFile((MAIN.parent / scheduler.path).resolve())
    role = object_properties(resource(scheduler_bicep, "appRole")["properties"])
    app = resource(bicep, "app")
    identities = object_properties(app["identity"])
    [registry] = items(object_properties(object_properties(app["properties"])["configuration"])["registries"])
    pull = resource(bicep, "registryPull")
    pull_properties = object_properties(pull["properties"])

    # The template's own scheduler module: the role is on the task hub the worker is given.
    assert (MAIN.parent / scheduler.path).resolve() == ROOT / "infra" / "modules" / "scheduler.bicep"
    assert text(scheduler.params["appPrincipalId"]) == "identity.outputs.principalId"
    assert text(scheduler.params["taskHubName"]) == "taskHubName"
    assert string_value(scheduler_bicep.value("durableTaskDataContributor")) == DURABLE_TASK_DATA_CONTRIBUTOR
    assert text(role["roleDefinitionId"]) == (
        "subscriptionResourceId('Microsoft.Authorization/roleDefinitions', durableTaskDataContributor)"
    )
    assert text(role["principalId"]) == "appPrincipalId"
    assert text(resource(scheduler_bicep, "appRole")["scope"]) == "taskHub"
    # The app, and its image pull, sign in as that identity.
    assert string_value(identities["type"]) == "UserAssigned"
    assert text(identities["userAssignedIdentities"]).split() == ["{", "'${identity.outputs.id}':", "{}", "}"]
    assert text(object_properties(registry)["identity"]) == "identity.outputs.id"
    assert string_value(bicep.value("acrPull")) == ACR_PULL
    assert "acrPull" in text(pull_properties["roleDefinitionId"])
    assert text(pull_properties["principalId"]) == "identity.outputs.principalId"
    assert text(pull["scope"]) == "registry"


def test_the_readme_builds_the_dockerfile_and_deploys_the_bicep_with_every_required_parameter() -> None:
    readme = README.read_text(encoding="utf-8")
    [build] = [line for line in readme.splitlines() if line.startswith("az acr build ")]
    [deploy] = [line for line in readme.splitlines() if line.startswith("az deployment group create ")]
    required = [d.name for d in BicepFile(MAIN).declarations if d.kind == "param" and not d.has_default]
    image = re.search(r"--image (\S+)", build)

    assert f"--file {DOCKERFILE.relative_to(ROOT).as_posix()} ." in build
    assert f"--template-file {MAIN.relative_to(ROOT).as_posix()} " in deploy
    assert sorted(required) == ["apiKey", "registryName"]
    assert [name for name in required if f" {name}=" not in deploy] == []
    assert image is not None and f" image={image.group(1)} " in deploy


@pytest.fixture
def hub() -> Iterator[str]:
    port = free_port()
    backend = create_test_backend(port=port)
    yield f"localhost:{port}"
    backend.stop()


def image_layout(destination: Path) -> Path:
    """The image's working directory as the Dockerfile's COPY lines fill it, from the repository root."""
    workdir = destination / "app"
    workdir.mkdir()
    copies = re.findall(r"^COPY (\S+) (\S+)$", DOCKERFILE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert [source for source, _ in copies] == [
        "requirements.txt",
        "agent_host/",
        "samples/container_apps_dts/agents.py",
    ]
    for source, target in copies:
        if source.endswith("/"):
            shutil.copytree(ROOT / source, workdir / target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / source, workdir / target)
    return workdir


def test_the_images_command_hosts_the_sample_agent_and_it_recalls_through_agent_client(
    hub: str, tmp_path: Path
) -> None:
    workdir = image_layout(tmp_path)
    command = entrypoint()
    assert command[:3] == ["python", "-m", "agent_host"]  # start_command runs `python -m agent_host` as this python
    port = free_port()
    command[command.index("--port") + 1] = str(port)
    env = command_environment(workdir, **{API_KEY_SETTING: "sample-key"})  # the layout's agent_host, not this one
    process = start_command(workdir, [*command[3:], "--sidecar", hub], env)
    client = TaskHubGrpcClient(host_address=hub)
    try:
        conversation = AgentClient(client).conversation("assistant", "c1")
        conversation.send("My name is Ada.")
        recalled = conversation.send("What is my name?")
        read = request_at(
            f"http://127.0.0.1:{port}",
            "GET",
            "/api/agents/assistant/conversations/c1",
            headers={"Authorization": "Bearer sample-key"},
        )
    finally:
        client.close()
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(60)
    assert process.stdout is not None
    output = process.stdout.read()
    process.stdout.close()

    assert recalled["text"] == "[offline model] Your name is Ada."
    assert read.status == 200 and read.json()["turnCount"] == 2
    assert "Traceback" not in output
    assert exit_code == 0, output
