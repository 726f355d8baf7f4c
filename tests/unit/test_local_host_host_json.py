"""`python -m agent_host serve` reads `extensions.durableTask.maxEntityOperationBatchSize` from host.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.__main__ import max_entity_operation_batch_size
from agent_host._local_host import DEFAULT_MAX_BATCH_SIZE

ROOT = Path(__file__).resolve().parents[2]


def host_json(tmp_path: Path, durable_task: object) -> Path:
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"version": "2.0", "extensions": {"durableTask": durable_task}}), encoding="utf-8")
    return path


def test_the_checked_in_host_json_commits_each_entity_operation_on_its_own() -> None:
    assert max_entity_operation_batch_size(ROOT / "host.json") == 1


def test_the_setting_is_read_as_written(tmp_path: Path) -> None:
    assert max_entity_operation_batch_size(host_json(tmp_path, {"maxEntityOperationBatchSize": 7})) == 7


@pytest.mark.parametrize("durable_task", [{"hubName": "x"}, "not a section", None], ids=["unset", "odd", "null"])
def test_without_the_setting_the_extensions_consumption_plan_default_applies(
    tmp_path: Path, durable_task: object
) -> None:
    assert DEFAULT_MAX_BATCH_SIZE == 50
    assert max_entity_operation_batch_size(host_json(tmp_path, durable_task)) == 50
    assert max_entity_operation_batch_size(tmp_path / "absent.json") == 50


@pytest.mark.parametrize("value", [0, -1, 1.5, "1", True, None])
def test_a_setting_that_is_not_a_positive_whole_number_stops_the_start(tmp_path: Path, value: object) -> None:
    path = host_json(tmp_path, {"maxEntityOperationBatchSize": value})

    with pytest.raises(SystemExit, match="maxEntityOperationBatchSize must be a whole number of at least 1") as raised:
        max_entity_operation_batch_size(path)

    assert str(path) in str(raised.value) and repr(value) in str(raised.value)
