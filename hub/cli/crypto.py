"""``hub crypto``: the encryption keyring (re-encrypt to the active key)."""

from __future__ import annotations

import asyncio
import sys

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings

__all__ = ["crypto_app"]

crypto_app = typer.Typer(no_args_is_help=True, help="Encryption keyring.")


@crypto_app.command("rotate")
def crypto_rotate(
    batch_size: int = typer.Option(200, min=1, max=10_000, help="Rows per transaction."),
) -> None:
    """Re-encrypt every credential and OAuth secret not under the active key (idempotent,
    restartable)."""
    from hub.core.crypto import Keyring
    from hub.core.db import Database
    from hub.credentials.rotation import remaining_by_key_id, rotate_credentials
    from hub.oauth.rotation import oauth_fields_by_key_id, rotate_oauth_fields

    settings = runtime_settings()
    keyring = Keyring.from_settings(settings)
    require_database(settings.database_url, schema=True)  # one line, never a traceback

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
            oauth_rows = await rotate_oauth_fields(db, keyring, batch_size=batch_size)
            oauth_left = {
                k: n
                for k, n in (await oauth_fields_by_key_id(db)).items()
                if k != keyring.active_key_id
            }
        finally:
            await db.dispose()
        typer.echo(f"rewrapped OAuth rows: {oauth_rows}", err=True)
        for key_id, count in sorted(oauth_left.items()):
            typer.echo(f"OAuth fields remaining under {key_id}: {count}", err=True)
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
        return 0 if not report.remaining and not oauth_left else 1

    raise typer.Exit(asyncio.run(run()))
