"""Sample 11 (parallel workflow) of agent-framework-azurefunctions, as our own app (`drop_in_workflows.parallel_app`):
a document fans out to two processors, two agents and then an agent beside a processor, fanning back in each time.
The hosted run's published output is what the same workflow gives in process, its non-agent outputs only."""

from __future__ import annotations

import asyncio
import json

from drop_in_hosts import module_host, path_of, poll
from drop_in_workflows import DocumentInput, parallel_app
from hosting import RunningHost

DOCUMENT = {"document_id": "doc-001", "content": "The quarterly earnings report shows 25% growth.\nRevenue rose."}


host = module_host(parallel_app)


def test_11_the_report_is_the_one_core_writes_in_process(host: RunningHost) -> None:
    started = host.request("POST", "/api/workflow/parallel_review/run", DOCUMENT)
    status = poll(
        host, path_of(started.json()["statusQueryGetUri"]), lambda r: r.json()["runtimeStatus"] == "Completed"
    )
    in_process = asyncio.run(parallel_app().workflow.run(DocumentInput(**DOCUMENT))).get_outputs()

    (report,) = status.json()["output"]
    assert status.json()["instanceId"] == started.json()["instanceId"]
    assert [report] == [output for output in in_process if isinstance(output, str)]
    assert report.startswith("=== Document Analysis Report ===\n")


def test_11_the_statistics_count_the_agents_combined_analysis(host: RunningHost) -> None:
    reply = host.request("POST", "/api/workflow/parallel_review/run?waitForResponse=true&timeoutSeconds=30", DOCUMENT)

    (report,) = reply.json()["output"]
    summary = json.loads(report.split("\n--- SummaryAgent ---\n", 1)[1].split("\n", 1)[0])["summary"]
    combined = summary.removeprefix("[offline model] ")
    assert combined.startswith(
        'Sentiment Analysis: {"sentiment": "positive", "confidence": 25.0}\n\nKeyword Extraction:'
    )
    assert f"\n--- Processor: statistics ---\nWords: {len(combined.split())}, Chars: {len(combined)}" in report
