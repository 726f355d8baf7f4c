"""History providers of a user's own, outside the conversation entity: lists in memory, and rows in SQLite."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar

from agent_framework import HistoryProvider, Message


class ListHistoryProvider(HistoryProvider):
    """A user's own history store: the very message objects it is given, in a list per session id."""

    def __init__(self, *, load_messages: bool = True) -> None:
        super().__init__("own_history", load_messages=load_messages)
        self.sessions: dict[str | None, list[Message]] = {}

    async def get_messages(self, session_id: str | None, *, state: Any = None, **kwargs: Any) -> list[Message]:
        return list(self.sessions.get(session_id, []))

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: Any = None, **kwargs: Any
    ) -> None:
        self.sessions.setdefault(session_id, []).extend(messages)


class SqliteHistoryProvider(HistoryProvider):
    """A history provider of the user's own: every message of a session as one row, keyed by the session id.

    Args:
        path: The SQLite file.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "sqlite_history"

    def __init__(self, path: Path) -> None:
        super().__init__(self.DEFAULT_SOURCE_ID)
        self.path = path
        with closing(sqlite3.connect(path)) as db, db:
            db.execute("CREATE TABLE IF NOT EXISTS messages (session_id TEXT, seq INTEGER, message TEXT)")

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """The session's messages in the order they were saved."""
        with closing(sqlite3.connect(self.path)) as db, db:
            rows = db.execute("SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))
            return [Message.from_dict(json.loads(row[0])) for row in rows]

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """Append messages to the session's rows."""
        with closing(sqlite3.connect(self.path)) as db, db:
            (count,) = db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
            db.executemany(
                "INSERT INTO messages VALUES (?, ?, ?)",
                [(session_id, count + n, json.dumps(m.to_dict())) for n, m in enumerate(messages)],
            )

    def stored(self) -> dict[str, list[dict[str, Any]]]:
        """Every stored message by session id."""
        with closing(sqlite3.connect(self.path)) as db, db:
            rows = db.execute("SELECT session_id, message FROM messages ORDER BY session_id, seq").fetchall()
        by_session: dict[str, list[dict[str, Any]]] = {}
        for session_id, message in rows:
            by_session.setdefault(session_id, []).append(json.loads(message))
        return by_session
