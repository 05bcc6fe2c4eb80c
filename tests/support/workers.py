"""``hub serve --workers 2`` in a fresh interpreter, on a migrated SQLite file (what the tests of
the supervisor itself start: :mod:`hub.cli.workers` cannot run in a forked test process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["start_two_workers"]

ROOT = Path(__file__).resolve().parents[2]


def start_two_workers(tmp_path: Path, port: int, **settings: str) -> subprocess.Popen[bytes]:
    """The supervisor's process (a session of its own: ``os.killpg`` stops it all), its streams
    piped; ``settings`` are extra environment variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUB_", "PROMETHEUS_"))}
    env.update(
        HUB_DATA_DIR=str(tmp_path / ".hub"),
        HUB_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}",
        **settings,
    )
    hub = [sys.executable, "-m", "hub.cli"]
    subprocess.run([*hub, "db", "upgrade"], cwd=ROOT, env=env, check=True, capture_output=True)
    return subprocess.Popen(
        [*hub, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
