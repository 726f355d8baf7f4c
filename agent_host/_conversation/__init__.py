"""A conversation: the entity that runs its turns and everything it keeps (state, history, sessions, records)."""
