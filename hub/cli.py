"""The ``hub`` command (typer): serve, migrate, and operator tasks (DESIGN §2)."""

from __future__ import annotations

import sys

import typer

from hub import __version__
from hub.core.devsecrets import with_dev_secrets
from hub.core.logging import configure_logging
from hub.core.settings import ConfigError, Settings, get_settings
from hub.mcp.cli import mcp_app

__all__ = ["app", "main"]

app = typer.Typer(no_args_is_help=True, add_completion=False, help="MCP Hub control plane.")
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
app.add_typer(db_app, name="db")
crypto_app = typer.Typer(no_args_is_help=True, help="Encryption keyring.")
app.add_typer(crypto_app, name="crypto")
app.add_typer(mcp_app, name="mcp")


def runtime_settings() -> Settings:
    """Settings for a real run: environment plus generated development secrets when allowed.

    JSON logging to stderr is configured first, so even the warning about generated secrets is a
    JSON line (stdout stays for what a command prints, e.g. the bootstrap key)."""
    try:
        settings = get_settings()
        configure_logging(settings.log_level)
        return with_dev_secrets(settings)
    except ConfigError as exc:
        typer.echo(f"hub: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def version() -> None:
    """Print the hub's version."""
    typer.echo(__version__)


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Listen address (default HUB_HOST)."),
    port: int | None = typer.Option(None, help="Listen port (default HUB_PORT)."),
) -> None:
    """Serve the REST API and the gateway endpoint."""
    import uvicorn

    from hub.app import create_app

    settings = runtime_settings()
    application = create_app(settings)
    uvicorn.run(
        application,
        host=host or settings.host,
        port=settings.port if port is None else port,
        log_config=None,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=20,
    )


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Migrate the database (HUB_DATABASE_URL) up to REVISION."""
    from hub.core.migrations import upgrade

    settings = runtime_settings()
    upgrade(settings.database_url, revision)
    typer.echo(f"database at {revision}", err=True)


@app.command()
def bootstrap(
    force: bool = typer.Option(False, "--force", help="Create another platform admin anyway."),
    if_absent: bool = typer.Option(
        False, "--if-absent", help="Do nothing (exit 0) when a platform admin exists."
    ),
) -> None:
    """Create the platform admin and print its API key, alone, on stdout (shown once)."""
    import asyncio

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
    print(key)


@crypto_app.command("rotate")
def crypto_rotate(
    batch_size: int = typer.Option(200, min=1, max=10_000, help="Rows per transaction."),
) -> None:
    """Re-encrypt every credential field not under the active key (idempotent, restartable)."""
    import asyncio

    from hub.core.crypto import Keyring
    from hub.core.db import Database
    from hub.credentials.rotation import remaining_by_key_id, rotate_credentials

    settings = runtime_settings()
    keyring = Keyring.from_settings(settings)

    async def run() -> int:
        db = Database.from_url(settings.database_url)
        try:
            before = await remaining_by_key_id(db, keyring)
            total = sum(before.values())
            typer.echo(f"active key {keyring.active_key_id}; fields to rewrap: {total}", err=True)
            with typer.progressbar(length=total, label="rotating", file=sys.stderr) as bar:
                report = await rotate_credentials(
                    db, keyring, batch_size=batch_size, on_batch=bar.update
                )
        finally:
            await db.dispose()
        typer.echo(f"rewrapped rows: {report.rewrapped_rows}", err=True)
        if report.remaining:
            for key_id, count in sorted(report.remaining.items()):
                typer.echo(f"remaining under {key_id}: {count}", err=True)
        else:
            typer.echo(f"remaining: 0 (every field is under {keyring.active_key_id})", err=True)
        if report.unusable_rows:
            typer.echo(
                f"rows that do not decrypt (key missing from the ring?): {report.unusable_rows}",
                err=True,
            )
            return 1
        return 0 if not report.remaining else 1

    raise typer.Exit(asyncio.run(run()))


def main() -> None:
    try:
        app()
    except ConfigError as exc:
        typer.echo(f"hub: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
