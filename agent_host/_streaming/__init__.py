"""Streaming turns: the durable channel between the entity that produces a turn and the HTTP requests that watch it."""
