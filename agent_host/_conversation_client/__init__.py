"""The conversation client: how every trigger (HTTP routes, `/run`, MCP tools, the inspector) reaches a conversation.

Below every trigger and above the conversation: it signals the conversation's entity, reads its state as the
conversation's read model (`_conversation/view.py`), waits for outcomes, and takes a turn. Knows the durable client
and the entity's wire contract; nothing of HTTP or MCP, nor how the entity runs a turn.
"""
