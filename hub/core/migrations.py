"""Running Alembic from code: the CLI, the app's tests and ``make lint`` all use these.

Migrations are the only way a schema is made. The scripts live in ``alembic/`` at the project
root (next to ``alembic.ini``); the database URL is passed explicitly, and is the schema owner's.

On PostgreSQL the app connects as another role, held to row-level security (README "Database
roles"). ``upgrade(..., app_role=…)`` then grants that role what the app needs, idempotently, on
every upgrade: the schema, the rows of every table (its policies still apply), the sequences and
the ``SECURITY DEFINER`` functions (revoked from PUBLIC by their migration). Default privileges
give it the tables later migrations create, too.
"""

from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from hub.core.db import create_engine

__all__ = [
    "alembic_config",
    "current_revision",
    "downgrade",
    "grant_app_role",
    "head_revision",
    "known_revisions",
    "revision_of",
    "upgrade",
]

_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def alembic_config(url: str) -> Config:
    cfg = Config(str(PROJECT_ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(PROJECT_ROOT / "alembic"))
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: str, revision: str = "head", *, app_role: str | None = None) -> None:
    """Migrate ``url`` up to ``revision`` (call from a thread with no running event loop); then,
    on PostgreSQL, grant ``app_role`` the app's privileges."""
    command.upgrade(alembic_config(url), revision)
    if app_role and not url.startswith("sqlite"):
        asyncio.run(grant_app_role(url, app_role))


@functools.cache
def known_revisions() -> tuple[str | None, frozenset[str]]:
    """This code's newest migration's revision, and every revision it knows."""
    script = ScriptDirectory.from_config(alembic_config(""))
    return script.get_current_head(), frozenset(rev.revision for rev in script.walk_revisions())


def head_revision() -> str | None:
    """The newest migration's revision."""
    return known_revisions()[0]


def revision_of(connection: Connection) -> str | None:
    """The revision the schema behind a (sync) connection is at; None: no migration ran."""
    return MigrationContext.configure(connection).get_current_revision()


def current_revision(url: str) -> str | None:
    """The revision ``url``'s schema is at (None: no migration ever ran); from a thread with no
    running event loop."""

    async def read() -> str | None:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(revision_of)
        finally:
            await engine.dispose()

    return asyncio.run(read())


def grant_statements(role: str) -> list[str]:
    """The grants of the app's role (a plain lower-case role name)."""
    if not _ROLE.match(role):
        raise ValueError("HUB_DATABASE_APP_ROLE must be a plain lower-case role name")
    dml = "SELECT, INSERT, UPDATE, DELETE"
    return [
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT {dml} ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
        f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {role}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT {dml} ON TABLES TO {role}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {role}",
        f"REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {role}",  # only migrations
    ]


async def grant_app_role(url: str, role: str) -> None:
    """Grant ``role`` the app's privileges on ``url``'s schema (as its owner)."""
    statements = grant_statements(role)
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)
