"""Plot a conversation's stored bytes per turn under each retention mode (writes docs/retention.png).

Drives the same 300 turns through the conversation entity once per mode, exactly as the Durable Functions host
would (its JSON entity batches, the returned state fed back as a string), with the offline model, a tool and
core compaction configured as in the template app. Run from the repository root:

    .venv/bin/python docs/retention_plot.py
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent_framework import (  # noqa: E402
    Agent,
    CompactionProvider,
    InMemoryHistoryProvider,
    SlidingWindowStrategy,
    tool,
)

from agent_host import (  # noqa: E402
    AgentFunctionApp,
    HostSettings,
    OfflineChatClient,
    RetentionSettings,
)

MODES = ("keep_all", "auto", "follow_compaction")
COLORS = {"keep_all": "#c0392b", "auto": "#2471a3", "follow_compaction": "#1e8449"}
BUDGET = 192 * 1024
TURNS = 300

FACTS = [
    ("favourite colour", "teal"),
    ("name", "Ada"),
    ("city", "Lisbon"),
    ("dog", "called Pixel"),
    ("project", "a tide-prediction model for small harbours"),
    ("favourite book", "The Left Hand of Darkness"),
]


@tool
def get_weather(city: Annotated[str, "The city to get the weather for."]) -> str:
    """Get today's weather for a city (a canned sample)."""
    return f"The weather in {city} is mild and dry, 18 °C, with a light westerly breeze through the afternoon."


def build_app(mode: str) -> AgentFunctionApp:
    """The template's agent (history and compaction configured the core way), hosted with one retention mode."""
    history = InMemoryHistoryProvider(skip_excluded=True)
    compaction = CompactionProvider(
        after_strategy=SlidingWindowStrategy(keep_last_groups=24), history_source_id=history.source_id
    )
    agent = Agent(
        OfflineChatClient(),
        instructions="You are a friendly assistant. Remember what the user tells you. Use tools when asked.",
        name="assistant",
        tools=[get_weather],
        context_providers=[history, compaction],
    )
    settings = HostSettings(retention=RetentionSettings(mode=mode, max_state_bytes=BUDGET))
    return AgentFunctionApp(agents=[agent], settings=settings)


def message_for(turn: int) -> str:
    """The same deterministic conversation for every mode: facts, questions about them, tool calls, chatter."""
    subject, value = FACTS[turn % len(FACTS)]
    kind = turn % 5
    if kind == 0:
        return f"My {subject} is {value}."
    if kind == 1:
        return f"What is my {FACTS[(turn // 5) % len(FACTS)][0]}?"
    if kind == 2:
        return f"use get_weather for City{turn}"
    detail = " ".join(["I was thinking about the harbour again today"] * (1 + turn % 4))
    return f"Turn {turn}: {detail}, and about how the tides line up with the moon."


def entity_batch(name: str, key: str, state: str | None, operation: str, payload: dict[str, Any]) -> str:
    """One batch as the Durable Functions host sends it; the input is JSON-encoded twice, as the extension does."""
    return json.dumps(
        {
            "self": {"name": name, "key": key},
            "exists": state is not None,
            "state": state,
            "batch": [{"name": operation, "signal": True, "input": json.dumps(json.dumps(payload))}],
        }
    )


@dataclass
class Run:
    """One mode's run: stored bytes and outcome of every turn."""

    mode: str
    sizes: list[int] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def drive(mode: str, turns: int) -> Run:
    """Run `turns` turns through the entity function and record the stored size after each."""
    app = build_app(mode)
    entity: Callable[[str], str] = next(
        f.get_user_function() for f in app.get_functions() if f.get_function_name() == "conversation_assistant"
    )
    run = Run(mode)
    state: str | None = None
    started = time.perf_counter()
    for turn in range(turns):
        turn_id = f"{turn:011x}plot"
        output = json.loads(
            entity(
                entity_batch(
                    "conversation_assistant",
                    "plot",
                    state,
                    "run",
                    {
                        "turnId": turn_id,
                        "message": message_for(turn),
                    },
                )
            )
        )
        state = output["entityState"]
        decoded = json.loads(state)
        if decoded["turns"][turn_id]["status"] == "failed":
            run.refused.append(turn)
        run.sizes.append(len(state.encode("utf-8")))
    run.seconds = time.perf_counter() - started
    run.final = json.loads(state or "{}")
    return run


def plot(runs: list[Run], path: Path) -> None:
    """Stored bytes per turn for each mode, with the budget and the watermarks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    defaults = RetentionSettings()
    figure, axes = plt.subplots(figsize=(10, 5.2), dpi=120)
    for line, label in (
        (1.0, "budget (maxStateBytes)"),
        (defaults.high_watermark, "high watermark"),
        (defaults.low_watermark, "low watermark"),
    ):
        axes.axhline(BUDGET * line / 1024, color="#7f8c8d", linestyle="--" if line < 1 else "-", linewidth=0.9)
        axes.annotate(label, (2, BUDGET * line / 1024 + 1.2), color="#7f8c8d", fontsize=8)
    for run in runs:
        turns = range(1, len(run.sizes) + 1)
        axes.plot(turns, [size / 1024 for size in run.sizes], color=COLORS[run.mode], linewidth=1.4, label=run.mode)
        if run.refused:
            axes.scatter(
                [turn + 1 for turn in run.refused],
                [run.sizes[turn] / 1024 for turn in run.refused],
                color=COLORS[run.mode],
                marker="x",
                s=14,
                linewidths=0.8,
                label=f"{run.mode}: turn refused (507)",
                zorder=3,
            )
    axes.set_xlabel("turn")
    axes.set_ylabel("stored conversation state (KiB)")
    axes.set_title(f"Stored state per turn, {len(runs[0].sizes)} turns, budget {BUDGET // 1024} KiB")
    axes.set_xlim(0, len(runs[0].sizes) + 1)
    axes.set_ylim(0, BUDGET / 1024 * 1.12)
    axes.legend(loc="lower right", fontsize=8)
    axes.grid(alpha=0.25)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    """Drive every mode, plot, and print a summary line per mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("retention.png"))
    args = parser.parse_args(argv)
    logging.getLogger("agent_host").setLevel(logging.ERROR)  # one warning per refused turn would drown the summary
    runs = [drive(mode, args.turns) for mode in MODES]
    plot(runs, args.out)
    for run in runs:
        first_refusal = run.refused[0] + 1 if run.refused else None
        evicted = run.final["truncation"]["evictedMessages"]
        print(
            f"{run.mode:18} final {run.sizes[-1]:>7} B  max {max(run.sizes):>7} B  "
            f"messages {len(run.final.get('messages', [])):>4}  evicted {evicted:>4}  "
            f"refused {len(run.refused):>3} (first at turn {first_refusal})  {run.seconds:.1f} s"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
