"""The HTTP side: route handlers that parse, signal an entity, wait and render. Knows no storage internals."""
