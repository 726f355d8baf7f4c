"""What each part of the state cache buys: a turn timed with every part on, and with each part off in turn.

The parts (`agent_host/_conversation/`): message reuse (`message_reuse.StoredMessages`), the fragment encoder
(`fragment_encoder`), the stored transcript text a cold process writes back (`FragmentEncoder.seed_transcript`)
and the plain-text message factory (`message_reuse._TextMessageFactory`).
Decoded-state reuse itself is what separates a warm turn from a cold one, so the cold/warm ratio is its figure.
A part is turned off by replacing it with the plain code it stands in for, only while its own runs are timed; all
variants alternate round by round, so each ratio comes from the same machine conditions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any
from unittest import mock

from agent_host._conversation import message_reuse
from agent_host._conversation.fragment_encoder import FragmentEncoder
from agent_host._conversation.message_reuse import StoredMessages
from agent_host._conversation.state import encode_state
from agent_host._conversation.state_cache import CONVERSATION_CACHE, ConversationCache

from .entity_cost import EntityBench, Snapshot, checked, unbounded_settings
from .workload import interleaved_medians


def _history_without_reuse(_cache: ConversationCache, records: Any, agent_name: str | None) -> Any:
    return StoredMessages().history_for(records, agent_name)


def _encode_without_fragments(_cache: ConversationCache, _scope: str, _key: str, state: dict[str, Any]) -> str:
    return encode_state(state)


# Each part, and how to run without it: the patches that put the plain code in its place.
PARTS: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "message reuse": lambda: mock.patch.object(ConversationCache, "history_for", _history_without_reuse),
    "fragment encoder": lambda: mock.patch.object(ConversationCache, "encode", _encode_without_fragments),
    "stored transcript text": lambda: mock.patch.object(FragmentEncoder, "seed_transcript", lambda *_: None),
    "text message factory": lambda: mock.patch.object(message_reuse._TEXT_MESSAGES, "build", lambda *_: None),
}


def measure_parts(sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """For each size: cold and warm turns with everything on, and each part's off/on ratio, cold and warm."""
    bench = EntityBench(unbounded_settings())
    rows: list[dict[str, Any]] = []
    for size in sorted(sizes):
        snapshot = bench.grow_to_messages(size)
        outputs: list[str] = []  # checked after timing, so the check is not timed
        cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {}
        for part, without in [("", contextlib.nullcontext), *PARTS.items()]:
            for mode in ("cold", "warm"):
                cases[f"{part}|{mode}"] = _turn_case(bench, snapshot, mode, without, outputs)
        medians = interleaved_medians(cases, repeats)
        CONVERSATION_CACHE.clear()
        for output in outputs:
            checked(output)
        on = {mode: medians[f"|{mode}"] for mode in ("cold", "warm")}
        rows.append(
            {
                "messages": snapshot.messages,
                "cold_ms": on["cold"],
                "warm_ms": on["warm"],
                "parts": {
                    part: {mode: medians[f"{part}|{mode}"] / on[mode] for mode in ("cold", "warm")} for part in PARTS
                },
            }
        )
    return rows


def _turn_case(
    bench: EntityBench,
    snapshot: Snapshot,
    mode: str,
    without: Callable[[], contextlib.AbstractContextManager[Any]],
    outputs: list[str],
) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """One more turn from `snapshot`, cold or warm (see `EntityBench.time_next_turn`), run without a part."""
    next_turn = snapshot.turns + 1
    batch = {"text": bench.batch(snapshot.state, next_turn)}

    def prepare() -> None:
        CONVERSATION_CACHE.clear()
        if mode == "warm":
            with without():
                written = bench.run(snapshot.previous, snapshot.turns)
            batch["text"] = bench.batch(written, next_turn)

    def action() -> None:
        with without():
            outputs.append(bench.function(batch["text"]))

    return action, prepare


def parts_table(rows: list[dict[str, Any]]) -> str:
    """The markdown table: each part's cost when off, as a multiple of the turn with everything on."""
    sizes = [row["messages"] for row in rows]
    header = "| part turned off | " + " | ".join(f"cold at {n:,} | warm at {n:,}" for n in sizes) + " |"
    lines = [
        "What each part of the state cache buys (turn cost with the part off / with everything on; median CPU time)",
        "",
        "On a shared machine a ratio between about 0.85x and 1.15x is within the noise of one run: a part that only",
        "acts on a cold turn (the stored transcript text) cannot change a warm one. Rerun `python -m bench --parts`",
        "to compare runs.",
        "",
        header,
        "|---|" + "---:|" * (2 * len(sizes)),
    ]
    lines.append(
        "| (none: ms per turn) | "
        + " | ".join(f"{row['cold_ms']:.2f} ms | {row['warm_ms']:.2f} ms" for row in rows)
        + " |"
    )
    lines.append(
        "| decoded-state reuse (cold / warm) | "
        + " | ".join(f"{row['cold_ms'] / row['warm_ms']:.2f}x | -" for row in rows)
        + " |"
    )
    for part in PARTS:
        cells = " | ".join(f"{row['parts'][part]['cold']:.2f}x | {row['parts'][part]['warm']:.2f}x" for row in rows)
        lines.append(f"| {part} | {cells} |")
    return "\n".join(lines)
