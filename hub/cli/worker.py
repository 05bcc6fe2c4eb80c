"""``hub worker``: the leader-free workers alone, with no HTTP listener (DESIGN §11).

Runs the same job kinds as ``hub serve`` (registered in :mod:`hub.wiring`) against
``HUB_DATABASE_URL`` until SIGTERM or SIGINT, then lets the jobs in flight finish their current
run (within ``HUB_SHUTDOWN_GRACE_S``) and exits 0. Any number may run beside any number of
``hub serve`` replicas on PostgreSQL; on SQLite only the first process per database file runs
jobs (see :mod:`hub.core.workers`), and a later one waits idle until stopped.
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

import typer

from hub.cli.database import require_database, safe_url
from hub.cli.runtime import runtime_settings

if TYPE_CHECKING:  # imported when the command runs: every ``hub`` command imports this module
    from hub.core.jobs import JobRegistry
    from hub.core.metrics import Metrics
    from hub.core.settings import Settings

__all__ = ["run_workers", "worker"]


async def run_workers(settings: Settings, registry: JobRegistry, metrics: Metrics) -> int:
    """Run ``registry``'s jobs until SIGTERM/SIGINT; the exit status (0)."""
    from hub.core.db import Database
    from hub.core.workers import Workers

    db = Database.from_url(
        settings.database_url,
        pool_size=settings.database_pool_size,
        statement_timeout_s=settings.database_statement_timeout_s,
    )
    workers = Workers(
        registry, metrics, poll_s=settings.worker_poll_s, concurrency=settings.worker_concurrency
    )
    stop = asyncio.Event()

    def on_signal() -> None:
        stop.set()
        workers.request_stop()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    try:
        if await workers.start(db, settings.database_url):
            await workers.wait()
        else:
            await stop.wait()  # nothing to run in this process: stay up, as a replica would
    finally:
        await workers.stop(settings.shutdown_grace_s)
        await db.dispose()
    return 0


def worker() -> None:
    """Run the background workers (no HTTP) until SIGTERM or SIGINT."""
    from hub.core.jobs import JobRegistry
    from hub.core.metrics import Metrics
    from hub.wiring import build_components

    settings = runtime_settings()
    # a refused connection is one line; an unmigrated database is waited for, as `hub serve` does
    if not require_database(settings.database_url):
        typer.echo(
            f"hub: warning: the database {safe_url(settings.database_url)} holds no hub schema"
            " yet: the workers start once `hub db upgrade` has run",
            err=True,
        )
    components = build_components(settings)
    status = asyncio.run(
        run_workers(settings, components.get(JobRegistry), components.get(Metrics))
    )
    raise typer.Exit(status)
