"""Alembic environment: async, on the hub's own engine factory (same SQLite pragmas as the app).

The URL comes from (in order) ``config.attributes["url"]`` (code), ``-x url=…`` (command line), or
the hub settings (``HUB_DATABASE_URL``).
"""

from __future__ import annotations

import asyncio
import logging.config

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

import hub.models  # noqa: F401  (registers every table on the metadata)
from hub.core.db import create_engine
from hub.core.settings import get_settings
from hub.models.base import Base

config = context.config
if config.config_file_name is not None and not config.attributes.get("url"):
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _url() -> str:
    url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url")
    return str(url or get_settings().database_url)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


#: PostgreSQL advisory lock key held while migrating ("mcphub" in ASCII): two ``hub db upgrade``
#: started together (two replicas' init containers, two operators) run one after the other, the
#: second finding the schema at head, instead of both writing it (a traceback of "tuple
#: concurrently updated", or "expected to match one row"). A session lock, not a transaction's:
#: a migration that builds an index CONCURRENTLY commits in the middle of the run. Taken by
#: trying, not by waiting: a ``pg_advisory_lock`` that waits holds its transaction open, and
#: ``CREATE INDEX CONCURRENTLY`` in the other run waits for every open transaction — a deadlock.
MIGRATION_LOCK = 0x6D6370687562
LOCK_POLL_S = 0.5


async def _take_migration_lock(connection: AsyncConnection) -> None:
    said = False
    while True:
        taken = await connection.scalar(text(f"SELECT pg_try_advisory_lock({MIGRATION_LOCK})"))
        await connection.commit()  # the session's lock outlives the transaction
        if taken:
            return
        if not said:
            logging.getLogger("hub.migrations").warning(
                "another hub db upgrade is running: waiting for it"
            )
            said = True
        await asyncio.sleep(LOCK_POLL_S)


async def _run_online() -> None:
    engine = create_engine(_url())
    try:
        async with engine.connect() as connection:
            locking = connection.dialect.name == "postgresql"
            if locking:
                await _take_migration_lock(connection)
            try:
                await connection.run_sync(_configure)
            finally:
                if locking:
                    await connection.exec_driver_sql(f"SELECT pg_advisory_unlock({MIGRATION_LOCK})")
                    await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_online())
