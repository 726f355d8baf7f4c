"""Agents inside orchestrations: `app.get_agent(context, name)` and what it hands back. Knows the entity's wire
contract (`_contract.py`) and the stored-message codec, never how a conversation is stored or served over HTTP."""
