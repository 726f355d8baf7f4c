"""Request-supplied text made safe for one log line: the local host logs paths, methods and entity keys it was sent.

A decoded path may hold a newline (``%0A``) or an escape sequence; logged as is, it forges log lines.
"""

from __future__ import annotations

MAX_LOGGED_CHARACTERS = 300


def loggable(text: str) -> str:
    """Escape control and non-ASCII characters (``\\n`` becomes ``\\\\n``) and cut long text.

    Args:
        text: Text that came from a request.

    Returns:
        One printable ASCII line of at most about ``MAX_LOGGED_CHARACTERS`` characters.
    """
    escaped = text.encode("unicode_escape").decode("ascii")
    if len(escaped) <= MAX_LOGGED_CHARACTERS:
        return escaped
    return f"{escaped[:MAX_LOGGED_CHARACTERS]}... ({len(escaped) - MAX_LOGGED_CHARACTERS} more characters)"


def entity_label(name: str, key: str) -> str:
    """The ``@name@key`` form the Durable extension logs entities with, escaped for a log line.

    Args:
        name: Entity name.
        key: Entity key.

    Returns:
        The label.
    """
    return loggable(f"@{name}@{key}")
