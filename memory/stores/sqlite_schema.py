"""The SQLite memory file's tables, and how their rows become records."""

from __future__ import annotations

import sqlite3


SCHEMA_VERSION = 2  # 2: profiles

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    created REAL NOT NULL,
    current_summary_id INTEGER                     -- the summary the role prompt is built on
);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id),
    started REAL NOT NULL,
    ended REAL
);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,          -- never reused, even after forget
    user_id INTEGER NOT NULL REFERENCES users(id),
    session_id INTEGER REFERENCES sessions(id),
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL,
    ts REAL NOT NULL,
    loop_turn_id TEXT,                             -- the dialogue loop's exchange id
    speaker TEXT
);
CREATE INDEX IF NOT EXISTS turns_by_user ON turns (user_id, id);
CREATE TABLE IF NOT EXISTS summaries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id),
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    strategy TEXT NOT NULL,
    predecessor_id INTEGER REFERENCES summaries(id),
    UNIQUE (user_id, version)
);
CREATE TABLE IF NOT EXISTS summary_turns (          -- the turns each version absorbed
    summary_id INTEGER NOT NULL REFERENCES summaries(id),
    turn_id INTEGER NOT NULL REFERENCES turns(id),
    PRIMARY KEY (summary_id, turn_id)
);
CREATE TABLE IF NOT EXISTS role_prompts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id),
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    persona_prompt TEXT NOT NULL,
    summary_id INTEGER REFERENCES summaries(id),
    reason TEXT NOT NULL,
    UNIQUE (user_id, version)
);
CREATE TABLE IF NOT EXISTS profiles (              -- the visitor profile: slot -> values, as JSON
    user_id INTEGER PRIMARY KEY REFERENCES users(id),
    data TEXT NOT NULL,
    updated REAL NOT NULL
);
"""


def next_version(c: sqlite3.Connection, table: str, user_id: int) -> int:
    row = c.execute(f"SELECT COALESCE(MAX(version), 0) + 1 FROM {table} WHERE user_id = ?", (user_id,)).fetchone()
    return int(row[0])
