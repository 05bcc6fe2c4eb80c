"""``hub bootstrap``: create the platform admin and print its key, alone, on stdout."""

from __future__ import annotations

import asyncio

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings

__all__ = ["EXISTS_MESSAGE", "bootstrap"]

EXISTS_MESSAGE = (
    "hub: a platform admin exists already; its key was shown once, when it was created.\n"
    "hub: to mint a new key: `hub bootstrap --force` (creates another platform admin and prints "
    "its key), or with a platform admin key: `hub keys create --platform` (POST /platform/keys)."
)


def bootstrap(
    force: bool = typer.Option(False, "--force", help="Create another platform admin anyway."),
    if_absent: bool = typer.Option(
        False, "--if-absent", help="Do nothing (exit 0) when a platform admin exists."
    ),
) -> None:
    """Create the platform admin and print its API key, alone, on stdout (shown once)."""
    if force and if_absent:
        raise typer.BadParameter("--force and --if-absent ask opposite things: give one")
    from hub.core.crypto import Keyring
    from hub.core.db import Database
    from hub.health.secret_checks import record_secret_checks
    from hub.principals.bootstrap import PlatformAdminExists, bootstrap_platform_admin

    settings = runtime_settings()
    if settings.api_key_pepper is None:  # runtime_settings fills it in; production requires it
        typer.echo("hub: HUB_API_KEY_PEPPER is missing", err=True)
        raise typer.Exit(2)
    pepper = settings.api_key_pepper.get_secret_value().encode()
    keyring = Keyring.from_settings(settings)
    require_database(settings.database_url, schema=True)

    async def run() -> str | None:
        db = Database.from_url(settings.database_url)
        try:
            key = await bootstrap_platform_admin(db, pepper, force=force)
            # the pepper this database's keys are made with from now on (--force: a changed
            # pepper accepted); and on the new database of a first platform admin, nothing
            # sealed yet, the keyring (with --force, the database's values may be another's)
            keys = () if force else None
            await record_secret_checks(db, keyring, pepper, keys=keys, replace_pepper=True)
            return key
        except PlatformAdminExists:
            return None
        finally:
            await db.dispose()

    key = asyncio.run(run())
    if key is None:
        # Said on every start of `make run` after the first: the key is not shown again.
        typer.echo(EXISTS_MESSAGE, err=True)
        if if_absent:
            return
        raise typer.Exit(1)
    typer.echo("Platform admin created. Its API key (shown once, store it now):", err=True)
    typer.echo(key)
