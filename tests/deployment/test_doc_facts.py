"""Facts the docs state that the code decides: each is computed from the code (or its command line), found on the page.

Measured figures come from results files (test_doc_figures.py); these are the counts, limits, defaults, versions and
arithmetic a page states, so a change to the code that makes a page wrong fails here.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from agent_host import HostSettings, chat_client_from_settings
from agent_host.__main__ import main as agent_host_main
from agent_host._app import entity_name_for
from agent_host._contract import (
    LONGEST_GENERATED_CONVERSATION_ID,
    MAX_CONVERSATION_ID_LENGTH,
    SCHEDULER_MAX_INSTANCE_ID_LENGTH,
    TurnRequest,
    conversation_id_limit,
)
from agent_host._conversation import state_cache
from agent_host._conversation.state import SCHEMA_VERSION
from agent_host._conversation_client.waits import FIRST_POLL_SECONDS, MAX_POLL_SECONDS, POLL_GROWTH
from agent_host._retention_settings import RetentionSettings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def page(name: str) -> str:
    """A docs page with its line breaks as spaces, so a phrase wrapped across lines is found."""
    return re.sub(r"\s+", " ", (DOCS / name).read_text(encoding="utf-8"))


def section(name: str, heading: str) -> str:
    text = (DOCS / name).read_text(encoding="utf-8")
    return text.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]


def hostile_request_cases() -> int:
    """How many cases `tests/reliability/test_bad_input.py` lists in its `CASES` table (a dict literal)."""
    tree = ast.parse((ROOT / "tests" / "reliability" / "test_bad_input.py").read_text(encoding="utf-8"))
    (table,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "CASES"
    ]
    assert isinstance(table, ast.Dict) and all(isinstance(key, ast.Constant) for key in table.keys)
    return len(table.keys)


def test_the_hostile_request_count_is_the_number_of_cases() -> None:
    cases = hostile_request_cases()

    assert f"A table of {cases} hostile requests" in page("reliability.md")
    assert f"and the {cases} hostile requests of `tests/reliability/test_bad_input.py`" in page("security.md")


def test_the_current_schema_version_and_its_samples() -> None:
    reliability = page("reliability.md")

    assert f"Version {SCHEMA_VERSION} is current" in reliability
    assert f"| `schemaVersion` {SCHEMA_VERSION + 1} (from the future) |" in reliability
    for version in range(1, SCHEMA_VERSION + 1):
        assert (ROOT / "tests" / "data" / f"state_v{version}_sample.json").exists()
        assert f"state_v{version}_sample.json" in reliability


def test_the_scheduler_conversation_id_limit() -> None:
    scaling, configuration = page("scaling.md"), page("configuration.md")
    per_agent = SCHEDULER_MAX_INSTANCE_ID_LENGTH - len(f"@{entity_name_for('')}@")
    assistant = conversation_id_limit(entity_name_for("assistant"), durable_task_scheduler=True)
    longest_name = per_agent - LONGEST_GENERATED_CONVERSATION_ID

    assert f"limits instance ids to {SCHEDULER_MAX_INSTANCE_ID_LENGTH} characters" in scaling
    assert "`@conversation_<agent>@<conversation id>`" in scaling and entity_name_for("Agent") == "conversation_agent"
    assert f"at most **{per_agent} characters minus the agent name's length** ({assistant} for `assistant`)" in scaling
    assert f"fewer than the {MAX_CONVERSATION_ID_LENGTH} the HTTP API otherwise takes" in scaling
    assert f"An agent name over {longest_name} characters is refused" in scaling
    assert f"less than the {LONGEST_GENERATED_CONVERSATION_ID} characters" in scaling
    assert f"leave: {per_agent} characters minus the agent name's length" in configuration


def test_the_state_cache_bound_and_its_estimate() -> None:
    scaling, configuration = page("scaling.md"), page("configuration.md")

    assert f"**`AGENT_HOST_STATE_CACHE_MB`** (default {HostSettings().state_cache_mb};" in scaling
    assert (
        f"counts {state_cache._BYTES_PER_TEXT_BYTE} bytes per byte of state text, "
        f"{state_cache._BYTES_PER_MESSAGE:,} per message, {state_cache._BYTES_PER_RICH_MESSAGE:,} more per message "
        f"with annotations or non-text contents and {state_cache._BYTES_PER_TURN_RECORD:,} per turn record" in scaling
    )
    assert f"next turn ({HostSettings().state_cache_mb}); `0` keeps none" in configuration


def test_the_scheduler_budget_arithmetic() -> None:
    scaling = page("scaling.md")
    retention = RetentionSettings()
    budget = retention.max_state_bytes

    assert f"(85%, {round(budget * retention.high_watermark):,} bytes)" in scaling.replace("high watermark ", "")
    assert f"(70%, {round(budget * retention.low_watermark):,} bytes)" in scaling
    assert retention.high_watermark == 0.85 and retention.low_watermark == 0.7
    assert f"with {1_000_000 - 991_232:,} to spare" in scaling
    assert f"1 MiB ({1024 * 1024:,})" in scaling


def test_the_queue_polling_arithmetic_follows_host_json() -> None:
    scaling = page("scaling.md")
    durable = json.loads((ROOT / "host.json").read_text(encoding="utf-8"))["extensions"]["durableTask"]
    partitions = durable["storageProvider"]["partitionCount"]
    hours, minutes, seconds = (int(part) for part in durable["storageProvider"]["maxQueuePollingInterval"].split(":"))
    interval = hours * 3600 + minutes * 60 + seconds
    month = 30 * 24 * 3600

    def millions(queues: int, every: int) -> float:
        return queues * month / every / 1_000_000

    assert f"host.json sets **{interval} s**" in scaling and f"host.json sets **{partitions}, the maximum**" in scaling
    assert (
        f"{partitions + 1} queues ({partitions} control queues and the work-item queue) every {interval} s" in scaling
    )
    assert f"about {millions(partitions + 1, interval):.0f} million requests a month" in scaling
    assert (
        f"(1 s would be {millions(partitions + 1, 1):.0f} million, 10 s {millions(partitions + 1, 10):.1f} million;"
        in (scaling)
    )
    assert f"the default 30 s with 4 partitions, {millions(5, 30):.1f} million)" in scaling


def test_the_polling_schedule_and_its_reads_while_a_model_answers() -> None:
    # `poll` reads at once, then after each growing sleep, until a read finds the answer.
    reads, waited, interval = 1, 0.0, FIRST_POLL_SECONDS
    while waited < 3.0:
        waited += interval
        reads += 1
        interval = min(interval * POLL_GROWTH, MAX_POLL_SECONDS)

    assert (FIRST_POLL_SECONDS, POLL_GROWTH, MAX_POLL_SECONDS) == (0.005, 1.5, 0.25)
    schedule = "reads once right after the signal, then 5 ms later, then 1.5 times later each time, up to every 250 ms"
    assert schedule in page("scaling.md")
    assert f"about {reads} reads while a model takes 3 s to answer" in page("scaling.md")
    assert "(5 ms, \u00d71.5, at most 250 ms)" in page("http.md")


def test_the_serve_options_table_lists_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        agent_host_main(["serve", "--help"])
    help_text = capsys.readouterr().out
    options = re.findall(r"^\s+(--[a-z-]+)", help_text, flags=re.MULTILINE)
    table = section("configuration.md", "## Run locally: `python -m agent_host serve`")
    rows = re.findall(r"^\| `(--[a-z-]+)[^`]*` \| ([^|]*) \|", table, flags=re.MULTILINE)

    assert [option for option, _ in rows] == [option for option in options if option != "--help"]
    defaults = dict(rows)
    assert defaults["--port"] == "`7071`" and defaults["--state-dir"] == "`.agent_host`"
    assert "AGENT_HOST_FUNCTION_KEY" in defaults["--function-key"]
    for option, default in rows:
        shown = re.search(rf"{option}[^\n]*\n?[^-]*?\(default: ([^)]+)\)", help_text)
        if shown is not None and default.startswith("`"):
            assert default.strip("`") == shown[1].strip(), option


def test_the_app_settings_table_gives_the_defaults_the_code_has() -> None:
    table = section("configuration.md", "## App settings")
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (.*) \|$", table, flags=re.MULTILINE))
    defaults = HostSettings()
    template = json.loads((ROOT / "local.settings.json.template").read_text(encoding="utf-8"))["Values"]
    expected = {
        "AGENT_HOST_MAX_STATE_BYTES": defaults.retention.max_state_bytes,
        "AGENT_HOST_MAX_MESSAGE_BYTES": defaults.max_message_bytes,
        "AGENT_HOST_WAIT_SECONDS": defaults.default_wait_seconds,
        "AGENT_HOST_MAX_WAIT_SECONDS": defaults.max_wait_seconds,
        "AGENT_HOST_RUN_TIMEOUT_SECONDS": defaults.run_timeout_seconds,
        "AGENT_HOST_MAX_TURN_RECORDS": defaults.max_turn_records,
        "AGENT_HOST_TURN_RECORD_TTL_SECONDS": defaults.turn_record_ttl_seconds,
        "AGENT_HOST_STATE_CACHE_MB": defaults.state_cache_mb,
    }

    for name, value in expected.items():
        number = f"{value:g}"
        assert re.search(rf"(\(|: ){number}\b", rows[name]), (name, number, rows[name])
        assert template[name] == number, name


def test_the_openai_compatible_row_says_a_model_name_is_needed_and_the_code_agrees() -> None:
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (.*) \|$", section("configuration.md", "## App settings"), re.M))

    assert "needs `OPENAI_CHAT_MODEL` too" in rows["OPENAI_BASE_URL"]
    with pytest.raises(Exception, match=r"[Mm]odel"):
        chat_client_from_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})


def test_every_turn_body_field_is_documented() -> None:
    turns = section("http.md", "### `POST .../conversations/{conversationId}/turns`")
    fields = [field.alias or name for name, field in TurnRequest.model_fields.items()]

    assert fields == [
        "message",
        "contents",
        "approvals",
        "wait",
        "timeoutSeconds",
        "stream",
        "responseFormat",
        "options",
        "approvalTtlSeconds",
        "ifBusy",
    ]
    assert [name for name in fields if not re.search(rf"^- `{name}`|\. `{name}`:", turns, flags=re.MULTILINE)] == []


def test_the_import_users_of_the_published_host_change_is_the_one_its_driver_runs() -> None:
    driver = (ROOT / "bench" / "published_driver.py").read_text(encoding="utf-8")
    (published_import,) = re.findall(r"^from agent_framework_azurefunctions import AgentFunctionApp$", driver, re.M)

    assert f"# was: {published_import}" in page("orchestrations.md")
    orchestrations = (ROOT / "tests" / "drop_in" / "drop_in_orchestrations.py").read_text(encoding="utf-8")
    assert "# was: from agent_framework_azurefunctions import" in orchestrations


def module_constants(path: Path) -> dict[str, object]:
    """A module's top-level constants (`NAME = literal`), read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        target.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def parametrized(path: Path, test: str) -> list[tuple[object, ...]]:
    """The argument tuples of a test's `@pytest.mark.parametrize(names, [...])`, read without importing its module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (function,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == test]
    (decorator,) = [d for d in function.decorator_list if isinstance(d, ast.Call) and d.args]
    return [tuple(value) for value in ast.literal_eval(decorator.args[1])]


def test_the_load_and_shutdown_tests_are_described_as_they_run() -> None:
    reliability = page("reliability.md")
    load = module_constants(ROOT / "tests" / "reliability" / "test_load.py")
    shutdown = ROOT / "tests" / "reliability" / "test_local_host_shutdown.py"
    reruns = dict(
        (size, rerun) for size, _, rerun in parametrized(shutdown, "test_kill_9_reruns_only_what_was_not_committed")
    )
    reads = dict(
        (size, read) for size, read, _ in parametrized(shutdown, "test_kill_9_reruns_only_what_was_not_committed")
    )
    exits = dict(parametrized(shutdown, "test_sigterm_finishes_the_running_batch_and_leaves_the_rest_queued"))

    assert f"{load['CONVERSATIONS']} conversations \u00d7 {load['TURNS']} turns at once" in reliability
    assert f"{load['CONVERSATIONS'] * load['TURNS']:,} turns" in reliability
    # With checkpoints the lost batch's finished turns replay their model calls: either way only turn 3 runs again.
    assert reruns[1] == reruns[20] == ["turn 3"]
    assert (
        f"after the restart | {len(reruns[20])} (turn 3, the one in flight; turns 1 and 2 of the lost batch replay "
        f"their checkpointed calls; 3 without checkpoints) | {len(reruns[1])} (turn 3, the one in flight) |"
        in reliability
    )
    assert f"| `GET` of turn 1 while turn 2 runs | {reads[20]} pending | {reads[1]} completed |" in reliability
    assert f"| {exits[20]} (the whole batch ran) | {exits[1]} (turn 1 finished);" in reliability


def test_the_local_host_request_deadlines() -> None:
    from agent_host._local_host.listener import DEFAULT_REQUEST_DEADLINES as deadlines

    assert f"A request head must arrive within {deadlines.head_seconds:g} s of the connection opening" in page(
        "reliability.md"
    )
    assert f"a request body within {deadlines.body_seconds:g} s of the handler" in page("reliability.md")
