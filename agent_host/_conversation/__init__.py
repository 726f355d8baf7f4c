"""A conversation: the entity that runs its turns and everything it keeps (state, history, sessions, records).

Layers above read a conversation only through its read model (`view.py`), handed out by the conversation client.
"""
