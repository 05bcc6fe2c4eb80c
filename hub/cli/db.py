"""``hub db``: the database schema (Alembic migrations)."""

from __future__ import annotations

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings

__all__ = ["db_app"]

db_app = typer.Typer(no_args_is_help=True, help="Database schema.")


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Migrate the database (HUB_DATABASE_URL) up to REVISION."""
    from hub.core.migrations import upgrade

    settings = runtime_settings()
    require_database(settings.database_url)  # a refused connection or login is one line
    upgrade(settings.database_url, revision)
    typer.echo(f"database at {revision}", err=True)
