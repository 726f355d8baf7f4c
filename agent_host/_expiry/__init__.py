"""Idle conversations expire: one durable orchestration per conversation sleeps until the conversation could be idle
for its TTL, asks the conversation's entity, and has it deleted or sleeps again (docs/retention.md).

`watcher.py` is that orchestration; `starter.py` starts it from a durable client, idempotently, whenever a
conversation takes a turn, and `recent.py` spares the start for a conversation seen watched a moment ago;
`orchestration.py` does the same from inside an orchestration (through an activity); `functions.py` registers the
orchestrator and the activity on the app. Speaks the entity's wire contract only.
"""
