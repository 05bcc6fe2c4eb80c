"""The database check ``hub db upgrade``, ``hub serve`` and ``hub bootstrap`` run first.

A database that refuses the connection or the login used to end these commands with a
700-line traceback. They now connect once, under a deadline, before doing anything else, and a
failure is one line on stderr naming the database (its URL without the password) and the cause
(exit 1; exit 2 for a URL the hub cannot use at all). Failures after the connection worked
(a broken migration) keep their traceback: that is a bug to report, not a setting to fix.
"""

from __future__ import annotations

import asyncio
import socket

import typer

__all__ = [
    "CONNECT_TIMEOUT_S",
    "NO_SCHEMA",
    "describe_failure",
    "require_database",
    "safe_url",
]

CONNECT_TIMEOUT_S = 10.0
_MAX_DETAIL = 240


def safe_url(url: str) -> str:
    """``url`` for a message: the password hidden, or a placeholder when it does not parse."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "HUB_DATABASE_URL"


def _first_line(text: str) -> str:
    line = " ".join(text.strip().splitlines()[:1]) or "no detail"
    return line if len(line) <= _MAX_DETAIL else line[: _MAX_DETAIL - 1] + "…"


def describe_failure(exc: BaseException) -> str:
    """What went wrong, in a few words and the driver's first line (never a parameter value:
    engines are made with ``hide_parameters``; connection errors carry none anyway)."""
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT_S:g} s"
    if isinstance(exc, socket.gaierror):
        return f"the host name does not resolve ({_first_line(str(exc.strerror or exc))})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the server running, and on this port?)"
    if isinstance(exc, OSError):
        return _first_line(str(exc.strerror or exc))
    if isinstance(exc, DBAPIError):
        detail = _first_line(str(exc.orig))
        state = str(getattr(exc.orig, "sqlstate", "") or "")
        if state.startswith("28"):  # SQLSTATE class 28: invalid authorization specification
            return f"the login was refused: {detail}"
        if state == "3D000":
            return f"no such database: {detail}"
        return detail
    return _first_line(str(exc))


#: what ``hub bootstrap`` says of a database with no hub schema in it
NO_SCHEMA = "holds no hub schema yet: run `hub db upgrade` first (with the same HUB_DATABASE_URL)"


async def _ping(url: str, *, schema: bool) -> bool:
    """Connect (raising on failure); with ``schema``, also whether the hub's migrations ran."""
    from hub.core.db import Database
    from hub.health.service import schema_migrated

    db = Database.from_url(url, pool_size=1)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            await db.ping()
            return await schema_migrated(db) if schema else True
    finally:
        await db.dispose()


def require_database(url: str, *, schema: bool = False) -> bool:
    """Connect to ``url`` once; on failure print one line and exit. With ``schema`` (``hub
    bootstrap``), a database the migrations never ran on is such a failure too, instead of a
    traceback. Without it, whether the migrations ran is returned: ``hub serve`` starts on such a
    database, since a replica may start before its migration job ends, and answers ``/readyz``
    503 until then, but says so first."""
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError  # not needed by other commands

    try:
        migrated = asyncio.run(_ping(url, schema=True))
    except ArgumentError as exc:  # includes an unknown dialect or driver
        typer.echo(f"hub: HUB_DATABASE_URL cannot be used: {_first_line(str(exc))}", err=True)
        raise typer.Exit(2) from None
    except (OSError, TimeoutError, SQLAlchemyError) as exc:
        typer.echo(
            f"hub: cannot use the database {safe_url(url)}: {describe_failure(exc)}", err=True
        )
        raise typer.Exit(1) from None
    if not migrated and schema:
        typer.echo(f"hub: the database {safe_url(url)} {NO_SCHEMA}", err=True)
        raise typer.Exit(1)
    return migrated
