"""`python -m bench.streaming_cost`: what streaming costs and how fast it is, through the local host.

Three measurements, all through the HTTP API of the local host (HTTP streams on, the SQLite stream store that
`python -m agent_host serve` uses), with a model that streams its words at a fixed pace:

1. Latency: from the model yielding its first word to the client reading the first `message.delta`, p50 and p99,
   with 1 and with 20 concurrent streams (one conversation each; the local host runs at most 8 entity operations
   at once, as its scheduler allows, so the others queue, which the figure does not count).
2. Storage writes per turn against answer length: the writer coalesces text, so writes follow the answer's
   duration (one per 50 ms at most), not its word count.
3. Host cost: process CPU time per turn of a streamed turn (read to its end as SSE) against a waited one, with an
   instant model, so the figure is the host's own work (client included, the same in both).

Prints the tables; `--json PATH` also writes the figures. `--quick` measures little, to show it still works.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from agent_framework import Agent, BaseChatClient, ChatResponse, ChatResponseUpdate, Content, Message, ResponseStream
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

from agent_host import AgentFunctionApp, HostSettings, StreamEvent
from agent_host._streaming.sqlite_store import SqliteStreamStore

from .served import ServedApp, posted
from .standalone import write_results
from .workload import percentile

AGENT = "bench"
WRITER_INTERVAL_SECONDS = 0.05


class PacedChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A model that answers `words N` with N words, streamed one every `word_seconds`; it notes when each answer's
    first word went out, by the message that asked."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "bench.paced"

    def __init__(self, word_seconds: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.word_seconds = word_seconds
        self.first_word_at: dict[str, float] = {}
        self.last_word_at: dict[str, float] = {}

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse | ResponseStream[ChatResponseUpdate, ChatResponse]:
        asked = messages[-1].text or ""
        count = int(asked.split()[1])
        words = [f"word{number} " for number in range(count)]
        usage = {"input_token_count": len(messages), "output_token_count": count}
        response = ChatResponse(messages=[Message("assistant", ["".join(words)])], usage_details=usage)
        if not stream:
            return response

        async def updates() -> Any:
            for number, word in enumerate(words):
                if number == 0:
                    self.first_word_at[asked] = time.perf_counter()
                yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(word)])
                self.last_word_at[asked] = time.perf_counter()
                if self.word_seconds:
                    await asyncio.sleep(self.word_seconds)
            yield ChatResponseUpdate(role="assistant", contents=[Content.from_usage(usage)])

        return ResponseStream(updates(), finalizer=lambda _: response)


class CountingStreamStore(SqliteStreamStore):
    """The local host's SQLite stream store, counting the writes each stream gets."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        await super().append(stream, events)
        with self._count_lock:
            self.writes[stream] += 1


class BenchHost(ServedApp):
    """The paced agent served by the local host with HTTP streams on and a stream store that counts its writes."""

    def __init__(self, state_dir: Path, word_seconds: float) -> None:
        self.model = PacedChatClient(word_seconds)
        self.store = CountingStreamStore(state_dir / "streams.sqlite3")
        app = AgentFunctionApp(
            agents=[Agent(self.model, "Answer as asked.", name=AGENT)],
            settings=HostSettings(),
            http_streams=True,
            stream_store=self.store,
        )
        super().__init__(app, state_dir, name="bench-local-host")

    def stop(self) -> None:
        """Stop the host, then close the stream store it wrote to."""
        super().stop()
        self.store.close()

    def post(self, conversation: str, message: str, *, stream: bool) -> tuple[float | None, dict[str, Any]]:
        """One turn; returns when the client read the first delta (streamed) and the turn's final body."""
        headers = {"Accept": "text/event-stream"} if stream else {}
        path = f"/api/agents/{AGENT}/conversations/{conversation}/turns"
        with posted(self.address, path, json.dumps({"message": message}).encode(), headers=headers) as response:
            if not stream:
                return None, json.loads(response.read())
            first_delta: float | None = None
            event, final = "", {}
            while line := response.readline():
                text = line.decode().rstrip("\r\n")
                if text.startswith("event: "):
                    event = text[len("event: ") :]
                    if event == "message.delta" and first_delta is None:
                        first_delta = time.perf_counter()
                elif text.startswith("data: ") and event in ("turn.completed", "turn.failed"):
                    final = json.loads(text[len("data: ") :])
            return first_delta, final


def _check(final: dict[str, Any], words: int) -> None:
    if final.get("status") != "completed" or len(final.get("text", "").split()) != words:
        raise RuntimeError(f"A benchmark turn did not complete as scripted: {str(final)[:300]}")


@dataclass
class LatencyFigures:
    """First token to first delta through the local host, at one level of concurrency."""

    streams: int
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def measure_latency(streams: int, rounds: int, words: int = 20, word_seconds: float = 0.02) -> LatencyFigures:
    """`rounds` rounds of `streams` concurrent streamed turns, each in its own conversation."""
    with tempfile.TemporaryDirectory(prefix="agent-host-stream-bench-") as state_dir:
        host = BenchHost(Path(state_dir), word_seconds)
        try:
            host.post("warm-up", f"words {words} warm", stream=True)

            def turn(round_number: int, index: int) -> float:
                message = f"words {words} latency-{streams}-{round_number}-{index}"
                first_delta, final = host.post(f"c{index}", message, stream=True)
                _check(final, words)
                assert first_delta is not None
                return (first_delta - host.model.first_word_at[message]) * 1000

            samples: list[float] = []
            with ThreadPoolExecutor(max_workers=streams) as pool:
                for round_number in range(rounds):
                    samples.extend(pool.map(turn, [round_number] * streams, range(streams)))
        finally:
            host.stop()
    return LatencyFigures(streams, len(samples), percentile(samples, 0.5), percentile(samples, 0.99), max(samples))


@dataclass
class WriteFigures:
    """Storage writes of one streamed turn of a given length, and how long the model took to stream it."""

    words: int
    answer_seconds: float
    events: int
    writes: int
    bound: int


def measure_writes(lengths: Sequence[int], word_seconds: float = 0.005) -> list[WriteFigures]:
    """One streamed turn per answer length, its stream's writes counted."""
    figures = []
    with tempfile.TemporaryDirectory(prefix="agent-host-stream-bench-") as state_dir:
        host = BenchHost(Path(state_dir), word_seconds)
        try:
            for words in lengths:
                conversation, message = f"writes-{words}", f"words {words} count"
                _, final = host.post(conversation, message, stream=True)
                _check(final, words)
                stream = f"conversation_{AGENT}/{conversation}/{final['turnId']}"
                events = len(asyncio.run(host.store.read(stream, 0, 100_000)))
                answer_seconds = host.model.last_word_at[message] - host.model.first_word_at[message]
                # turn.started and the first text at once, then one write per interval, and the last one.
                bound = 3 + math.ceil(answer_seconds / WRITER_INTERVAL_SECONDS)
                figures.append(WriteFigures(words, round(answer_seconds, 3), events, host.store.writes[stream], bound))
        finally:
            host.stop()
    return figures


@dataclass
class CostFigures:
    """Process CPU time per turn (median of blocks), waited against streamed, with an instant model."""

    turns: int
    words: int
    waited_cpu_ms: float
    streamed_cpu_ms: float
    ratio: float
    waited_wall_ms: float
    streamed_wall_ms: float


def measure_cost(turns: int, words: int = 100, blocks: int = 8) -> CostFigures:
    """`turns` turns each way in alternating blocks of one conversation each; the median block's process CPU time
    per turn (the medians resist the other work a shared machine does meanwhile)."""
    per_block = max(turns // blocks, 1)
    with tempfile.TemporaryDirectory(prefix="agent-host-stream-bench-") as state_dir:
        host = BenchHost(Path(state_dir), 0.0)
        try:
            for stream in (False, True):
                host.post(f"warm-{stream}", f"words {words} warm", stream=stream)
            cpu: dict[bool, list[float]] = {False: [], True: []}
            wall: dict[bool, list[float]] = {False: [], True: []}
            for block in range(blocks):
                for stream in (False, True):
                    cpu_start, wall_start = time.process_time(), time.perf_counter()
                    for turn in range(per_block):
                        _, final = host.post(f"cost-{stream}", f"words {words} {block}-{turn}", stream=stream)
                        _check(final, words)
                    cpu[stream].append((time.process_time() - cpu_start) * 1000 / per_block)
                    wall[stream].append((time.perf_counter() - wall_start) * 1000 / per_block)
        finally:
            host.stop()
    waited, streamed = statistics.median(cpu[False]), statistics.median(cpu[True])
    return CostFigures(
        per_block * blocks,
        words,
        round(waited, 2),
        round(streamed, 2),
        round(streamed / waited, 2),
        round(statistics.median(wall[False]), 2),
        round(statistics.median(wall[True]), 2),
    )


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser(prog="python -m bench.streaming_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="measure a little, to see that it still works")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    rounds_one, rounds_twenty, lengths, turns = (5, 1, (10, 100), 8) if args.quick else (60, 5, (10, 100, 1000), 160)

    latency = [measure_latency(1, rounds_one), measure_latency(20, rounds_twenty)]
    writes = measure_writes(lengths)
    cost = measure_cost(turns)

    print("First model token to first message.delta at the client (local host, HTTP streams, SQLite store)")
    print("| streams | samples | p50 ms | p99 ms | max ms |\n|---:|---:|---:|---:|---:|")
    for figure in latency:
        print(
            f"| {figure.streams} | {figure.samples} | {figure.p50_ms:.1f} | {figure.p99_ms:.1f} | {figure.max_ms:.1f} |"
        )
    print("\nStorage writes per streamed turn (model: one word every 5 ms; answer s: its first word to its last)")
    print("| words | answer s | events stored | writes | bound (3 + answer s / 0.05) |\n|---:|---:|---:|---:|---:|")
    for row in writes:
        print(f"| {row.words} | {row.answer_seconds} | {row.events} | {row.writes} | {row.bound} |")
    print(
        f"\nHost cost per turn, {cost.words} words, instant model, {cost.turns} turns each (process CPU, median block)"
    )
    print("| waited ms | streamed ms | streamed / waited | waited wall ms | streamed wall ms |")
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {cost.waited_cpu_ms} | {cost.streamed_cpu_ms} | {cost.ratio}x | {cost.waited_wall_ms} | "
        f"{cost.streamed_wall_ms} |"
    )
    figures = {
        "latency": [asdict(f) for f in latency],
        "writes": [asdict(w) for w in writes],
        "cost": asdict(cost),
    }
    if args.json:
        write_results(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
