"""``hub db``: the database schema (Alembic migrations)."""

from __future__ import annotations

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings

__all__ = ["db_app"]

db_app = typer.Typer(no_args_is_help=True, help="Database schema.")


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Migrate the database up to REVISION, as its owner (HUB_DATABASE_OWNER_URL, or else
    HUB_DATABASE_URL); on PostgreSQL, then grant HUB_DATABASE_APP_ROLE the app's privileges."""
    from hub.core.migrations import upgrade

    settings = runtime_settings()
    require_database(settings.migration_url)  # a refused connection or login is one line
    upgrade(settings.migration_url, revision, app_role=settings.database_app_role)
    typer.echo(f"database at {revision}", err=True)
