"""A worker process for the tests: ``python -m tests.workers.process URL LOG [LEASE_S]``.

Runs :func:`hub.cli.worker.run_workers` (what ``hub worker`` runs) with two test job kinds:

- ``test.once``: appends ``done <key> <pid> <time>`` to ``LOG`` and finishes (one-shot);
- ``test.slow``: appends ``started <key> <pid> <time>``, sleeps 3 s, appends ``done …``.

Lines are appended with ``O_APPEND`` (one ``write`` each), so several processes can share a log.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from pydantic import SecretStr

from hub.cli.worker import run_workers
from hub.core.jobs import JobRegistry, JobRun
from hub.core.metrics import Metrics
from hub.core.settings import Settings


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{line} {time.time()}\n".encode())
    finally:
        os.close(fd)


def registry(log: str, lease_s: float) -> JobRegistry:
    jobs = JobRegistry()

    async def once(run: JobRun) -> None:
        _append(log, f"done {run.key} {os.getpid()}")

    async def slow(run: JobRun) -> None:
        _append(log, f"started {run.key} {os.getpid()}")
        await asyncio.sleep(3)
        _append(log, f"done {run.key} {os.getpid()}")

    jobs.register("test.once", once, lease_s=lease_s)
    jobs.register("test.slow", slow, lease_s=lease_s)
    return jobs


def main() -> None:
    url, log = sys.argv[1], sys.argv[2]
    lease_s = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    settings = Settings(
        database_url=url,
        api_key_pepper=SecretStr("p" * 40),
        worker_poll_s=0.2,
        shutdown_grace_s=10,
    )
    _append(log, f"ready - {os.getpid()}")
    status = asyncio.run(run_workers(settings, registry(log, lease_s), Metrics()))
    # when the hub's part ended (jobs stopped, pool closed), before the interpreter's teardown
    _append(log, f"exited - {os.getpid()}")
    sys.exit(status)


if __name__ == "__main__":
    main()
