"""Whether retention bounds the whole state: long conversations through the entity, measured after every turn.

`python -m bench.retention_budget` runs the three cases issue 13 measured against the old host (turn receipts
costed as fixed let the state grow past its budget) and prints, per case, the largest stored state, the share of
it that was turn receipts, and what retention deleted. Every turn goes through the entity function with the host's
JSON batch format, on the offline model (its answer echoes the message, so an answer is as long as the message).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from agent_framework import Agent

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient, RetentionSettings
from agent_host._conversation.state import EXPIRED_TURNS_KEY, MESSAGES_KEY, TURNS_KEY, encode_state

from .workload import entity_batch

ENTITY = "conversation_assistant"
_WORDS = "the durable entity keeps each conversation within the budget it was given while turns keep coming "


@dataclass(frozen=True)
class BudgetCase:
    """A conversation to replay: how many turns of how many characters, under which retention settings."""

    name: str
    turns: int
    message_chars: int
    retention: RetentionSettings
    max_turn_records: int = 100


@dataclass
class TurnSizes:
    """The stored state right after one committed turn."""

    turn: int
    state_bytes: int
    transcript_bytes: int
    receipt_bytes: int
    messages: int
    receipts: int


@dataclass
class BudgetRun:
    """One case replayed: the sizes after every turn, and what retention did."""

    case: BudgetCase
    sizes: list[TurnSizes] = field(default_factory=list)
    evicted_messages: int = 0
    expired_answers: int = 0
    capacity_error: dict[str, str] | None = None

    @property
    def largest(self) -> TurnSizes:
        return max(self.sizes, key=lambda size: size.state_bytes)

    def summary(self) -> dict[str, Any]:
        largest = self.largest
        return {
            "case": self.case.name,
            "budget": self.case.retention.max_state_bytes,
            "largestState": largest.state_bytes,
            "atTurn": largest.turn,
            "receiptShareAtLargest": round(largest.receipt_bytes / largest.state_bytes, 3),
            "messagesAtEnd": self.sizes[-1].messages,
            "receiptsAtEnd": self.sizes[-1].receipts,
            "evictedMessages": self.evicted_messages,
            "expiredAnswers": self.expired_answers,
            "capacityError": self.capacity_error,
        }


CASES = (
    BudgetCase("30,000-byte budget, 40 turns of ~500 characters", 40, 500, RetentionSettings(max_state_bytes=30_000)),
    BudgetCase("64 KiB budget, 60 turns of ~3,000 characters", 60, 3_000, RetentionSettings(max_state_bytes=65_536)),
    BudgetCase("default settings, 150 turns of 12,000 characters", 150, 12_000, RetentionSettings()),
)


def message(turn: int, chars: int) -> str:
    """A user message of about `chars` characters, unique per turn."""
    text = f"Turn {turn}: "
    while len(text) < chars:
        text += _WORDS
    return text[:chars]


def replay(case: BudgetCase) -> BudgetRun:
    """Run every turn of `case` through the entity function and measure the committed state after each."""
    settings = HostSettings(retention=case.retention, max_turn_records=case.max_turn_records)
    agent = Agent(OfflineChatClient(), "You answer every message.", name="assistant")
    app = AgentFunctionApp([agent], settings=settings)
    (function,) = [f.get_user_function() for f in app.get_functions() if f.get_function_name() == ENTITY]
    run = BudgetRun(case)
    state: str | None = None
    for turn in range(1, case.turns + 1):
        operation = ("run", {"turnId": f"{turn:011x}00000000", "message": message(turn, case.message_chars)})
        output = json.loads(function(entity_batch(ENTITY, "budget", state, [operation])))
        if output["results"][0]["isError"]:
            raise RuntimeError(f"turn {turn} of {case.name!r} failed: {output['results'][0]['result']}")
        state = output["entityState"]
        decoded = json.loads(state)
        receipts = {TURNS_KEY: decoded.get(TURNS_KEY, {}), EXPIRED_TURNS_KEY: decoded.get(EXPIRED_TURNS_KEY, [])}
        run.sizes.append(
            TurnSizes(
                turn=turn,
                state_bytes=len(state.encode("utf-8")),
                transcript_bytes=len(encode_state(decoded[MESSAGES_KEY]).encode("utf-8")),
                receipt_bytes=len(encode_state(receipts).encode("utf-8")),
                messages=len(decoded[MESSAGES_KEY]),
                receipts=len(receipts[TURNS_KEY]),
            )
        )
        run.evicted_messages = decoded["truncation"].get("evictedMessages", 0)
        run.expired_answers = decoded["truncation"].get("expiredAnswers", 0)
        run.capacity_error = decoded.get("capacityError")
    return run


def main() -> None:
    """Replay every case and print its summary and the sizes every tenth turn."""
    for case in CASES:
        run = replay(case)
        print(json.dumps(run.summary()))
        for sizes in run.sizes[9::10]:
            print("   ", json.dumps(asdict(sizes)))


if __name__ == "__main__":
    main()
