"""Retention after every committed turn of long conversations, through the entity function (`bench.retention_budget`),
and the same replays on the standalone worker (its entity on durabletask's in-memory backend).

Issue 13's three cases grew past their budget when receipts were costed as fixed: 31% over a 30,000-byte budget,
7.5x over 64 KiB, and 2.9 MB under the defaults. Issue 26's are the template's own agent, whose summaries eviction
deleted first, leaving the messages they stood for stored, excluded and sent to the model in no form: from turn 15
at 30,000 bytes, and 117 messages at once at the default budget. docs/retention.md shows these replays' figures,
and must show exactly what the bench prints.
"""

from __future__ import annotations

import functools

import pytest
from worker_hosting import worker_turns

import function_app
from agent_host import RetentionSettings
from agent_host._conversation.retention import RECEIPT_SHARE
from agent_host._http.rendering import render_message
from bench import retention_budget
from bench.retention_budget import (
    CASES,
    TEMPLATE_CASES,
    BudgetCase,
    BudgetRun,
    TurnHost,
    entity_function_turns,
    markdown,
    page_figures,
    replay,
)

MODES = ["auto", "follow_compaction"]
# The same replays through the function app's entity function and through a standalone worker's entity on
# durabletask's in-memory backend: one entity, two hosts, the same assertions.
HOSTS: dict[str, TurnHost] = {"functions": entity_function_turns, "worker": worker_turns}


@functools.cache
def replayed(cases: tuple[BudgetCase, ...], index: int, mode: str, host: str = "functions") -> BudgetRun:
    case = cases[index]
    retention = RetentionSettings(mode=mode, max_state_bytes=case.retention.max_state_bytes)
    return replay(BudgetCase(case.name, case.turns, case.message_chars, retention, agent=case.agent), HOSTS[host])


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=["30000-bytes", "64-KiB", "defaults"])
def test_every_committed_turn_leaves_the_whole_state_within_its_budget(index: int, mode: str, host: str) -> None:
    run = replayed(CASES, index, mode, host)

    budget = run.case.retention.max_state_bytes
    over = [(sizes.turn, sizes.state_bytes) for sizes in run.sizes if sizes.state_bytes > budget]
    assert over == []
    assert all(sizes.receipt_bytes <= budget * RECEIPT_SHARE for sizes in run.sizes)
    assert run.capacity_error is None
    assert run.evicted_messages > 0  # the control: each case needed retention
    last = run.sizes[-1]
    assert last.messages >= 2 and last.receipts >= 1  # the newest exchange and its receipt are always kept
    assert last.transcript_bytes > last.receipt_bytes  # receipts never crowd out the conversation


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(TEMPLATE_CASES)), ids=["30000-bytes", "defaults"])
def test_the_model_is_sent_every_stored_message_or_a_summary_standing_for_it(index: int, mode: str, host: str) -> None:
    run = replayed(TEMPLATE_CASES, index, mode, host)

    budget = run.case.retention.max_state_bytes
    assert len(run.sizes) == 110
    assert [sizes.turn for sizes in run.sizes if sizes.orphaned or sizes.mislinked] == []
    assert [(sizes.turn, sizes.unseen) for sizes in run.sizes if sizes.unseen != 0] == []
    assert [sizes.turn for sizes in run.sizes if sizes.state_bytes > budget or not sizes.newest_kept] == []
    assert run.capacity_error is None
    # The controls: retention deleted messages, and a summary stood in for them. Under `auto` summaries of summaries
    # and the messages they stand for stay stored, excluded, until pressure; `follow_compaction` deletes them at once.
    assert run.evicted_messages > 0 and run.first_message_evicted_at is not None
    assert all(sizes.summaries >= 1 for sizes in run.sizes[20:])
    if mode == "auto":
        assert max(sizes.summaries for sizes in run.sizes) > 1 and max(sizes.excluded for sizes in run.sizes) > 8


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(TEMPLATE_CASES)), ids=["30000-bytes", "defaults"])
def test_a_fact_whose_messages_retention_deleted_is_still_recalled_from_its_summary(
    index: int, mode: str, host: str
) -> None:
    run = replayed(TEMPLATE_CASES, index, mode, host)

    assert run.first_message_evicted_at is not None and run.first_message_evicted_at < run.case.turns
    assert run.recall_question == "What is my fact a?"
    assert run.recall_answer == "[offline model] Your fact a is value1."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("cases", "index"),
    [(CASES, index) for index in range(len(CASES))] + [(TEMPLATE_CASES, index) for index in range(len(TEMPLATE_CASES))],
    ids=["30000-bytes", "64-KiB", "defaults", "template-30000-bytes", "template-defaults"],
)
def test_the_worker_keeps_exactly_what_the_function_app_keeps_after_every_turn(
    cases: tuple[BudgetCase, ...], index: int, mode: str
) -> None:
    on_worker, on_functions = replayed(cases, index, mode, "worker"), replayed(cases, index, mode, "functions")

    assert on_worker.sizes == on_functions.sizes
    assert on_worker.summary() == on_functions.summary()
    assert on_worker.first_message_evicted_at == on_functions.first_message_evicted_at
    assert on_worker.recall_answer == on_functions.recall_answer


def test_every_summary_link_the_api_shows_names_a_stored_message() -> None:
    run = replayed(TEMPLATE_CASES, 0, "auto")
    records = run.final_records

    shown = [render_message(record, "assistant") for record in records]

    links = [message["summarizedBy"] for message in shown if "summarizedBy" in message]
    assert links and set(links) <= {message["messageId"] for message in shown}


@pytest.mark.parametrize("index", range(len(TEMPLATE_CASES)), ids=["30000-bytes", "defaults"])
def test_a_summary_never_lists_a_later_message_under_a_deleted_messages_id(index: int) -> None:
    # Core names an unnamed message by its position, and positions come round again once retention deletes: the
    # answer of turn 109 at 30,000 bytes was named like a message a stored summary stands for, which it then listed.
    records = replayed(TEMPLATE_CASES, index, "auto").final_records

    shown = {message["messageId"]: message for message in (render_message(record, "assistant") for record in records)}

    claimed = [
        (summary_id, listed)
        for summary_id, summary in shown.items()
        for listed in summary.get("summaryOf", ())
        if listed in shown and shown[listed].get("summarizedBy") != summary_id
    ]
    assert any("summaryOf" in message for message in shown.values())
    assert claimed == []


def test_the_page_shows_exactly_what_the_bench_prints() -> None:
    budget_runs = [replayed(CASES, index, "auto") for index in range(len(CASES))]
    template_runs = [replayed(TEMPLATE_CASES, index, "auto") for index in range(len(TEMPLATE_CASES))]

    figures = markdown(budget_runs, template_runs)

    page = retention_budget.DOC.read_text(encoding="utf-8")
    assert page_figures(page) == figures, "docs/retention.md is stale: run `python -m bench.retention_budget --write`"


def test_the_bench_replays_the_templates_own_compaction() -> None:
    strategy = function_app.compaction.after_strategy
    template = retention_budget.template_agent(retention_budget.RecordingOfflineClient())
    history, compaction = template.context_providers

    assert type(strategy) is type(compaction.after_strategy)
    assert (strategy.target_count, strategy.threshold) == (
        compaction.after_strategy.target_count,
        compaction.after_strategy.threshold,
    )
    assert function_app.history.skip_excluded is history.skip_excluded is True
    assert function_app.compaction.history_source_id == compaction.history_source_id == history.source_id
    assert function_app.assistant.default_options["store"] is template.default_options["store"] is False
    assert function_app.assistant.default_options["instructions"] == template.default_options["instructions"]
