"""The tables of the local host's one SQLite file: entity states, the signal queue, and the orchestration tables.

One module for the whole file, so the store that owns the database creates it from one place. Knows the tables;
knows nothing about what an entity batch or an episode does with them.
"""

from __future__ import annotations

ENTITY_TABLES = ("entities", "signals")
ENTITY_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (name, key)
);
CREATE TABLE IF NOT EXISTS signals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    operation TEXT NOT NULL,
    input TEXT NULL,
    enqueued_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS signals_by_entity ON signals (name, key, seq);
"""
# Added with orchestrations: an operation an orchestration calls carries the id its response names, and the caller.
SIGNAL_COLUMNS_ADDED = ("request_id", "parent_instance_id", "parent_execution_id")

ORCHESTRATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS orchestrations (
    instance_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    version TEXT NULL,
    execution_id TEXT NOT NULL,
    status TEXT NOT NULL,
    input TEXT NULL,
    output TEXT NULL,
    custom_status TEXT NULL,
    parent_instance_id TEXT NULL,
    parent_execution_id TEXT NULL,
    parent_task_id INTEGER NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    progress TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS orchestrations_by_created ON orchestrations (created_ms);
CREATE TABLE IF NOT EXISTS orchestration_history (
    instance_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (instance_id, position)
);
CREATE TABLE IF NOT EXISTS orchestration_inbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT NULL,
    kind TEXT NOT NULL,
    task_id INTEGER NULL,
    event TEXT NOT NULL,
    visible_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_by_instance ON orchestration_inbox (instance_id, seq);
CREATE INDEX IF NOT EXISTS inbox_by_visibility ON orchestration_inbox (visible_ms);
CREATE TABLE IF NOT EXISTS activity_queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    input TEXT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS activities_by_instance ON activity_queue (instance_id, execution_id);
"""
"""Orchestrations (one row per instance), their history (one row per event, current execution only), their inbox
(events waiting for an episode; a timer is an inbox row that becomes visible when it is due) and the activity queue.
"""
