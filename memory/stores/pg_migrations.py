"""The PostgreSQL memory schema, as numbered migrations the robot applies on start.

Each migration runs once, in its own transaction, and is recorded in ``schema_migrations``;
a transaction-scoped advisory lock makes robots that start together apply them one at a
time (the second finds them done). Never edit a migration that has shipped: add the next one.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from psycopg import AsyncConnection

log = logging.getLogger(__name__)

# Any constant shared by every robot of the fleet: it names the lock, nothing else.
MIGRATION_LOCK = 0x6B696F736B  # "kiosk"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "visitors' memory: users, sessions, turns, summaries, role prompts", """
        CREATE TABLE users (
            id BIGSERIAL PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created DOUBLE PRECISION NOT NULL,
            current_summary_id BIGINT              -- the summary the role prompt is built on
        );
        CREATE TABLE sessions (
            id BIGSERIAL PRIMARY KEY,
            user_id BIGINT NOT NULL REFERENCES users(id),
            started DOUBLE PRECISION NOT NULL,
            ended DOUBLE PRECISION
        );
        CREATE TABLE turns (
            id BIGSERIAL PRIMARY KEY,              -- never reused, even after forget
            user_id BIGINT NOT NULL REFERENCES users(id),
            session_id BIGINT REFERENCES sessions(id),
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            text TEXT NOT NULL,
            ts DOUBLE PRECISION NOT NULL,
            loop_turn_id TEXT,                     -- the dialogue loop's exchange id
            speaker TEXT
        );
        CREATE INDEX turns_by_user ON turns (user_id, id);
        CREATE TABLE summaries (
            id BIGSERIAL PRIMARY KEY,
            user_id BIGINT NOT NULL REFERENCES users(id),
            version INTEGER NOT NULL,
            text TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            strategy TEXT NOT NULL,
            predecessor_id BIGINT REFERENCES summaries(id),
            UNIQUE (user_id, version)
        );
        ALTER TABLE users ADD FOREIGN KEY (current_summary_id) REFERENCES summaries(id);
        CREATE TABLE summary_turns (               -- the turns each version absorbed
            summary_id BIGINT NOT NULL REFERENCES summaries(id),
            turn_id BIGINT NOT NULL REFERENCES turns(id),
            PRIMARY KEY (summary_id, turn_id)
        );
        CREATE TABLE role_prompts (
            id BIGSERIAL PRIMARY KEY,
            user_id BIGINT NOT NULL REFERENCES users(id),
            version INTEGER NOT NULL,
            text TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            persona_prompt TEXT NOT NULL,
            summary_id BIGINT REFERENCES summaries(id),
            reason TEXT NOT NULL,
            UNIQUE (user_id, version)
        );
        CREATE INDEX sessions_by_user ON sessions (user_id);
        CREATE INDEX summaries_by_user ON summaries (user_id, version);
        CREATE INDEX role_prompts_by_user ON role_prompts (user_id, version);
    """),
    Migration(2, "the visitor profile", """
        CREATE TABLE profiles (
            user_id BIGINT PRIMARY KEY REFERENCES users(id),
            data JSONB NOT NULL,                   -- slot -> values (memory/recall/profile.py)
            updated DOUBLE PRECISION NOT NULL
        );
    """),
)

SCHEMA_VERSION = MIGRATIONS[-1].version

# The tables a visitor's data lives in (forget clears them, then rewrites them).
OWNED_TABLES = ("summary_turns", "role_prompts", "profiles", "summaries", "turns", "sessions", "users")


async def migrate(conn: AsyncConnection) -> list[int]:
    """Apply the migrations this database lacks; the versions applied now (often none)."""
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                           "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied DOUBLE PRECISION NOT NULL)")
        cur = await conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        row = await cur.fetchone()
        done = int(row[0]) if row else 0
        if done > SCHEMA_VERSION:
            raise RuntimeError(f"the memory database has schema version {done}, newer than this robot's "
                               f"{SCHEMA_VERSION}: upgrade the robot")
        for migration in MIGRATIONS:
            if migration.version <= done:
                continue
            await conn.execute(migration.sql)  # type: ignore[arg-type] - constant SQL, no parameters
            await conn.execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                               (migration.version, migration.name, time.time()))
            log.info("memory database: applied migration %d (%s)", migration.version, migration.name)
            applied.append(migration.version)
    return applied
