"""``hub bootstrap``: create the platform admin and print its key, alone, on stdout."""

from __future__ import annotations

import asyncio

import typer

from hub.cli.runtime import runtime_settings

__all__ = ["bootstrap"]


def bootstrap(
    force: bool = typer.Option(False, "--force", help="Create another platform admin anyway."),
    if_absent: bool = typer.Option(
        False, "--if-absent", help="Do nothing (exit 0) when a platform admin exists."
    ),
) -> None:
    """Create the platform admin and print its API key, alone, on stdout (shown once)."""
    from hub.core.db import Database
    from hub.principals.bootstrap import PlatformAdminExists, bootstrap_platform_admin

    settings = runtime_settings()
    if settings.api_key_pepper is None:  # runtime_settings fills it in; production requires it
        typer.echo("hub: HUB_API_KEY_PEPPER is missing", err=True)
        raise typer.Exit(2)
    pepper = settings.api_key_pepper.get_secret_value().encode()

    async def run() -> str | None:
        db = Database.from_url(settings.database_url)
        try:
            return await bootstrap_platform_admin(db, pepper, force=force)
        except PlatformAdminExists:
            return None
        finally:
            await db.dispose()

    key = asyncio.run(run())
    if key is None:
        if if_absent:
            return
        typer.echo("hub: a platform admin exists already; use --force to add another", err=True)
        raise typer.Exit(1)
    typer.echo("Platform admin created. Its API key (shown once, store it now):", err=True)
    typer.echo(key)
