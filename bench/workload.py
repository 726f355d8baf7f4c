"""The benchmark's workload: a zero-latency scripted model, the conversation it is fed, and the timing rule.

Depends only on `agent_framework` and the standard library, because the published host's driver imports it too,
from a separate virtual environment that has core but not `agent_host`.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from agent_framework import BaseChatClient, ChatResponse, ChatResponseUpdate, Message, ResponseStream
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

AGENT_NAME = "bench"
AGENT_INSTRUCTIONS = "You are the benchmark's agent."
USER_CHARS = 70
REPLY_CHARS = 200
_FILLER = "The quick brown fox jumps over the lazy dog while the durable entity keeps every word of it safe and sound. "


def _padded(prefix: str, length: int) -> str:
    text = prefix
    while len(text) < length:
        text += _FILLER
    return text[:length]


def user_message(turn: int) -> str:
    """The user's message of turn `turn` (1-based): about 70 characters, unique per turn."""
    return _padded(f"Turn {turn}: please remember this. ", USER_CHARS)


def reply_to(text: str) -> str:
    """The scripted reply to a user message: about 200 characters, determined by the message alone."""
    return _padded(f"Noted ({text[:12].strip()}). ", REPLY_CHARS)


def usage_for(messages: Sequence[Message]) -> dict[str, int]:
    """Token usage a real model would report, so both hosts store a usage record like they would in production."""
    return {"input_token_count": 4 * len(messages), "output_token_count": REPLY_CHARS // 4, "total_token_count": 0}


class ZeroLatencyChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A model that answers instantly: the reply depends only on the last user message, in either host.

    It supports streaming as well, because the published host runs agents with `stream=True` first.
    """

    OTEL_PROVIDER_NAME: ClassVar[str] = "bench.zero_latency"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = 0

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse | ResponseStream[ChatResponseUpdate, ChatResponse]:
        self.calls += 1
        last = messages[-1].text if messages else ""
        reply = Message("assistant", [reply_to(last or "")])
        # Real models report when they answered; without it the published host logs a warning every turn.
        created_at = datetime.now(UTC).isoformat()
        response = ChatResponse(
            messages=[reply], model="zero-latency", created_at=created_at, usage_details=usage_for(messages)
        )
        if not stream:
            return response

        async def _updates() -> Any:
            yield ChatResponseUpdate(
                role="assistant", contents=list(reply.contents), message_id=reply.message_id, created_at=created_at
            )

        return ResponseStream(_updates(), finalizer=lambda updates: response)


def entity_batch(name: str, key: str, state: str | None, operations: Sequence[tuple[str, Any]]) -> str:
    """The JSON the Durable Functions host hands an entity function for one batch of signalled operations.

    Each input is JSON-encoded twice, as the extension forwards the signal's JSON body as a string. This mirrors
    `agent_host._local_host.scheduler.entity_batch_json` because the published host's driver runs this module in
    a virtual environment without `agent_host`.
    """
    return json.dumps(
        {
            "self": {"name": name, "key": key},
            "exists": state is not None,
            "state": state,
            "batch": [
                {"name": operation, "signal": True, "input": json.dumps(json.dumps(payload))}
                for operation, payload in operations
            ],
        }
    )


def cpu_ms(action: Callable[[], Any], *, collect: bool = True) -> float:
    """CPU time `action` takes in this process (all threads), in milliseconds, by default after a full collection.

    CPU time rather than wall time: the machines these run on are shared, and a turn's host cost is the work it
    does, not the time it waits for a core. A collection first, so one run does not pay for the garbage of others.
    """
    if collect:
        gc.collect()
    start = time.process_time()
    action()
    return (time.process_time() - start) * 1000


def median_ms(action: Callable[[], Any], repeats: int, *, prepare: Callable[[], Any] | None = None) -> float:
    """Median CPU time of `action` (see `cpu_ms`) over `repeats` runs, after one untimed warm-up run.

    `prepare` runs untimed before every run (the warm-up included), e.g. to reset a cache or to set up the
    state the timed run starts from.
    """
    return interleaved_medians({"only": (action, prepare)}, repeats)["only"]


def interleaved_medians(
    cases: Mapping[str, tuple[Callable[[], Any], Callable[[], Any] | None]],
    repeats: int,
    timed_elsewhere: Mapping[str, Callable[[], float]] | None = None,
) -> dict[str, float]:
    """Median CPU time of each case's action over `repeats` rounds, one run of every case per round.

    Interleaving puts each case under the same machine conditions, so their ratios hold even when the absolute
    times drift. Each case is warmed up once first; its `prepare` (if any) runs untimed before each of its runs.
    `timed_elsewhere` cases run in another process and return the CPU time they measured there by `cpu_ms`.
    """
    timed: dict[str, Callable[[], float]] = {}
    for name, (action, prepare) in cases.items():
        timed[name] = lambda action=action, prepare=prepare: _prepared_cpu_ms(action, prepare)
    timed.update(timed_elsewhere or {})
    samples: dict[str, list[float]] = {name: [] for name in timed}
    for round_number in range(repeats + 1):
        for name, measure in timed.items():
            elapsed = measure()
            if round_number:
                samples[name].append(elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}


def _prepared_cpu_ms(action: Callable[[], Any], prepare: Callable[[], Any] | None) -> float:
    if prepare is not None:
        prepare()
    return cpu_ms(action)


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The `fraction` percentile of `samples` (nearest rank), e.g. 0.99 for p99."""
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]
