"""``hub db``: the database schema (Alembic migrations)."""

from __future__ import annotations

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings

__all__ = ["db_app"]

db_app = typer.Typer(no_args_is_help=True, help="Database schema.")


@db_app.command("upgrade")
def db_upgrade(
    revision: str = typer.Argument(
        "head", metavar="[REVISION]", help="Migrate up to this revision (default: the newest)."
    ),
) -> None:
    """Migrate the database up to REVISION, as its owner (HUB_DATABASE_OWNER_URL, or else
    HUB_DATABASE_URL); on PostgreSQL, then grant HUB_DATABASE_APP_ROLE the app's privileges.
    A database already past REVISION is left as it is (this never downgrades), a newer one
    than this code knows included: the previous version's migration job, during a rollback."""
    from alembic.util import CommandError

    from hub.core.migrations import current_revision, head_revision, known_revisions, upgrade

    settings = runtime_settings()
    require_database(settings.migration_url)  # a refused connection or login is one line
    now = current_revision(settings.migration_url)
    head, known = known_revisions()
    if revision == "head" and now is not None and now not in known:
        # a later version's schema: alembic's "Can't locate revision" (exit 2) failed a
        # rollback's migration job, and the previous version runs on the expanded schema
        typer.echo(
            f"hub: database at {now}, newer than this code's newest migration ({head}): "
            "left as it is",
            err=True,
        )
        return
    try:
        upgrade(settings.migration_url, revision, app_role=settings.database_app_role)
    except CommandError as exc:  # an unknown or ambiguous revision: nothing was changed
        typer.echo(f"hub: cannot migrate to {revision!r}: {exc}", err=True)
        raise typer.Exit(2) from None
    now, head = current_revision(settings.migration_url), head_revision()
    typer.echo(
        f"database at {now}" + (" (the newest)" if now == head else f"; newest {head}"), err=True
    )
