"""Contract: both Durable Functions backends, as host.json and as the defaults a conversation lives under.

The checked-in host.json runs on Azure Storage, tuned for Flex Consumption; the azd prepackage hook
(infra/hooks/durable_backend.py) writes the Durable Task Scheduler's host.json for the package and puts the
checked-in one back afterwards. Both files are validated against the published host.json schema, which predates the
scheduler's one key (`storageProvider.type`): the scheduler variant is checked against that schema plus that key and
nothing else. The hook runs here as azd runs it, in its own process, on a copy of the files.
The last tests check that the default budget and largest message leave a turn room under the scheduler's cap.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from backend_hook import copy_app, load_hook, run_hook
from bicep_source import BicepFile
from test_settings_files import SCHEMAS, best_error, load_json

ROOT = Path(__file__).resolve().parents[2]
HOOK = load_hook()
SCHEDULER = HOOK.DURABLE_TASK_SCHEDULER
SAVED = HOOK.SAVED_HOST_JSON

# Durable Task Scheduler limits: entity state, inputs and outputs "1 MB" each
# (https://learn.microsoft.com/azure/durable-task/scheduler/durable-task-scheduler#limitations-and-considerations);
# the large-payload page calls the message boundary 1 MiB. The smaller reading is the cap.
SCHEDULER_CAP = 1_000_000
# Bytes one UTF-8 byte of message text can become in the operation input: the durable client JSON-encodes the input
# (ensure_ascii, so a control character becomes \u0001) and sends that text as a JSON string (\\u0001, 7 bytes).
WORST_ESCAPING = 7
# A one-operation work item or result, less the state and the message text: instance id (100 characters at most on
# the scheduler), operation name and ids, trace context, up to 32 approval answers, the idempotency key (255) and the
# request hash, the operation's small result, protobuf framing. Generous on purpose.
ENVELOPE = 16 * 1024
# keep_all admits a turn while state and message fit the budget, so the answer can take the state past it once:
# room for one answer of the default model (gpt-4.1-mini: at most 32,768 output tokens, about 4 bytes each).
ANSWER_OVERSHOOT = 32_768 * 4
RECOMMENDED_STATE_BYTES = 614_400
RECOMMENDED_MESSAGE_BYTES = 32_768


def host_json_schema_with_provider_type() -> dict:
    """The published host.json schema plus `durableTask.storageProvider.type`, a key it predates.

    The scheduler is chosen with `"type": "azureManaged"` (Microsoft's quickstart), which the extension reads with
    `options.StorageProvider.TryGetValue("type", ...)`; SchemaStore's schema lists the Azure Storage keys only and
    forbids any other. Only that key is added: a misspelt key is still an error.
    """
    schema = copy.deepcopy(load_json(SCHEMAS / "host.schema.json"))
    provider = schema["definitions"]["durableTask-extension"]["properties"]["storageProvider"]
    provider["properties"]["type"] = {"type": "string"}
    return schema


def extended_schema_errors(document: dict) -> list[str]:
    validator = jsonschema.Draft4Validator(host_json_schema_with_provider_type())
    return [error.message for error in validator.iter_errors(document)]


def extended_best_error(document: dict) -> str:
    validator = jsonschema.Draft4Validator(host_json_schema_with_provider_type())
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    return "" if error is None else error.message


def without_storage_provider(config: dict) -> dict:
    stripped = copy.deepcopy(config)
    del stripped["extensions"]["durableTask"]["storageProvider"]
    return stripped


def run_shell(root: Path, command: str, backend: str) -> subprocess.CompletedProcess[str]:
    """Run a hook's inline command as azd does on POSIX: `sh -c`, in the project folder, with the azd env values."""
    env = {**os.environ, HOOK.BACKEND_VARIABLE: backend}
    return subprocess.run(
        ["sh", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def seconds(interval: str) -> float:
    hours, minutes, rest = interval.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def test_the_checked_in_host_json_runs_azure_storage_tuned_for_flex_consumption() -> None:
    provider = load_json(ROOT / "host.json")["extensions"]["durableTask"]["storageProvider"]

    # No `type`: the Azure Storage provider, against AzureWebJobsStorage (Azurite under `func start`).
    assert "type" not in provider
    # Flex Consumption guidance: a queue polling interval of 10 seconds or less (the default is 30).
    assert 0 < seconds(provider["maxQueuePollingInterval"]) <= 10
    # The most partitions Azure Storage allows: they cap how many instances run entities, and a task hub keeps
    # the count it was created with.
    assert provider["partitionCount"] == 16


def test_the_hook_writes_the_scheduler_host_json_and_changes_nothing_else(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    original = (app / "host.json").read_text(encoding="utf-8")

    result = run_hook(app, "apply", backend=SCHEDULER)

    written = json.loads((app / "host.json").read_text(encoding="utf-8"))
    assert result.returncode == 0, result.stderr
    assert written["extensions"]["durableTask"]["storageProvider"] == {
        "type": "azureManaged",
        "connectionStringName": "DURABLE_TASK_SCHEDULER_CONNECTION_STRING",
    }
    assert without_storage_provider(written) == without_storage_provider(json.loads(original))
    assert extended_schema_errors(written) == []
    assert HOOK.bundle_lower_bound(written["extensionBundle"]["version"]) >= (4, 32, 0)
    assert (app / SAVED).read_text(encoding="utf-8") == original
    assert "Durable Task Scheduler" in result.stdout


@pytest.mark.parametrize("line_ending", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_restore_puts_the_checked_in_host_json_back_byte_for_byte(tmp_path: Path, line_ending: str) -> None:
    app = copy_app(tmp_path)
    (app / "host.json").write_bytes((app / "host.json").read_bytes().replace(b"\n", line_ending.encode()))
    original = (app / "host.json").read_bytes()
    assert run_hook(app, "apply", SCHEDULER).returncode == 0

    result = run_hook(app, "restore")

    assert result.returncode == 0, result.stderr
    assert (app / "host.json").read_bytes() == original
    assert not (app / SAVED).parent.exists()


@pytest.mark.parametrize("backend", [None, HOOK.AZURE_STORAGE], ids=["unset", "azureStorage"])
def test_azure_storage_packages_the_checked_in_host_json_untouched(tmp_path: Path, backend: str | None) -> None:
    app = copy_app(tmp_path)
    original = (app / "host.json").read_bytes()

    result = run_hook(app, "apply", backend=backend)

    assert result.returncode == 0, result.stderr
    assert (app / "host.json").read_bytes() == original
    assert not (app / ".azure").exists()


def test_an_interrupted_package_is_undone_before_the_next_one(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    original = (app / "host.json").read_bytes()
    assert run_hook(app, "apply", SCHEDULER).returncode == 0  # packaging failed: no postpackage hook ran

    again = run_hook(app, "apply", SCHEDULER)
    back_to_storage = run_hook(app, "apply", HOOK.AZURE_STORAGE)

    assert again.returncode == 0, again.stderr
    assert back_to_storage.returncode == 0, back_to_storage.stderr
    # The second apply set aside the checked-in file again, not the scheduler variant it found.
    assert (app / "host.json").read_bytes() == original
    assert "interrupted package" in back_to_storage.stdout


def test_an_unknown_backend_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    original = (app / "host.json").read_bytes()

    result = run_hook(app, "apply", backend="dts")

    assert result.returncode == 2
    assert "DURABLE_BACKEND is 'dts'; use one of azureStorage, durableTaskScheduler" in result.stderr
    assert (app / "host.json").read_bytes() == original
    assert not (app / ".azure").exists()


def test_a_bundle_without_the_scheduler_provider_is_refused(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    config = json.loads((app / "host.json").read_text(encoding="utf-8"))
    config["extensionBundle"]["version"] = "[4.*, 5.0.0)"
    (app / "host.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    before = (app / "host.json").read_bytes()

    result = run_hook(app, "apply", SCHEDULER)

    assert result.returncode == 2
    assert "needs 4.32.0 or later; set extensionBundle.version to '[4.32.0, 5.0.0)'" in result.stderr
    assert (app / "host.json").read_bytes() == before
    assert not (app / SAVED).exists()


@pytest.mark.skipif(shutil.which("sh") is None or shutil.which("python3") is None, reason="needs sh and python3")
def test_the_posix_hooks_in_azure_yaml_package_the_scheduler_host_json_and_restore(tmp_path: Path) -> None:
    hooks = yaml.safe_load((ROOT / "azure.yaml").read_text(encoding="utf-8"))["services"]["api"]["hooks"]
    app = copy_app(tmp_path)
    original = (app / "host.json").read_bytes()

    prepackage = run_shell(app, hooks["prepackage"]["posix"]["run"], SCHEDULER)
    packaged = json.loads((app / "host.json").read_text(encoding="utf-8"))  # what azd zips now
    postpackage = run_shell(app, hooks["postpackage"]["posix"]["run"], SCHEDULER)

    assert (prepackage.returncode, postpackage.returncode) == (0, 0), prepackage.stderr + postpackage.stderr
    assert packaged["extensions"]["durableTask"]["storageProvider"]["type"] == "azureManaged"
    assert (app / "host.json").read_bytes() == original


def test_the_published_schema_lacks_only_the_provider_type_the_scheduler_needs(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    run_hook(app, "apply", SCHEDULER)
    scheduler_host_json = json.loads((app / "host.json").read_text(encoding="utf-8"))
    misspelt = copy.deepcopy(scheduler_host_json)
    misspelt["extensions"]["durableTask"]["storageProvider"]["conectionStringName"] = "X"

    published = best_error(scheduler_host_json, "host.schema.json")
    extended = extended_schema_errors(scheduler_host_json)

    assert published == "Additional properties are not allowed ('type' was unexpected)"
    assert extended == []
    assert "('conectionStringName' was unexpected)" in extended_best_error(misspelt)


def test_worst_case_escaping_of_a_message_into_an_operation_input_is_seven_fold() -> None:
    samples = [chr(code) for code in range(128)] + ["é", "中", "😀"]

    def growth(text: str) -> float:
        # As azure-functions-durable's signal_entity sends it: json.dumps, then aiohttp's json= encodes that string.
        encoded = json.dumps(json.dumps(text * 1000))
        return (len(encoded) - len(json.dumps(json.dumps("")))) / len((text * 1000).encode("utf-8"))

    assert max(growth(sample) for sample in samples) == WORST_ESCAPING


def test_the_default_budget_and_message_leave_a_turn_room_under_the_scheduler_cap() -> None:
    template = load_json(ROOT / "local.settings.json.template")["Values"]
    bicep_default = int(BicepFile(ROOT / "infra" / "main.bicep").value("maxStateBytes").text.decode())
    state = int(template["AGENT_HOST_MAX_STATE_BYTES"])
    message = int(template["AGENT_HOST_MAX_MESSAGE_BYTES"])

    largest_scheduler_message = state + ANSWER_OVERSHOOT + WORST_ESCAPING * message + ENVELOPE

    assert (state, message) == (RECOMMENDED_STATE_BYTES, RECOMMENDED_MESSAGE_BYTES)
    assert bicep_default == state
    assert largest_scheduler_message == 991_232
    assert largest_scheduler_message <= SCHEDULER_CAP
    # The arithmetic docs/scaling.md shows is this one.
    scaling = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    for figure in (state, ANSWER_OVERSHOOT, WORST_ESCAPING * message, ENVELOPE, largest_scheduler_message):
        assert re.search(rf"\b{figure:,}\b", scaling), figure
