"""Alembic environment: async, on the hub's own engine factory (same SQLite pragmas as the app).

The URL comes from (in order) ``config.attributes["url"]`` (code), ``-x url=…`` (command line), or
the hub settings (``HUB_DATABASE_URL``).
"""

from __future__ import annotations

import asyncio
import logging.config

from alembic import context
from sqlalchemy.engine import Connection

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


async def _run_online() -> None:
    engine = create_engine(_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_configure)
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_online())
