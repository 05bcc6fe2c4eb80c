"""A migrated SQLite file for a live ``hub serve`` in a test's directory, without paying for
``hub db upgrade`` in every test.

The first call in a test process runs the real command (``python -m hub.cli db upgrade``,
through :mod:`tests.support.hubcommand`) once, into a directory of its own, and later calls copy
the file it made: every live hub still starts
on a database the command migrated, at a file copy's cost instead of a subprocess that imports
the hub and runs every migration (3-4 s a test on the CI machine). Tests of the command itself
(``tests/test_smoke_run.py``, ``tests/cli/test_database_errors.py``…) still run it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from tests.support.hubcommand import hub_argv

__all__ = ["migrated_sqlite"]

_lock = threading.Lock()
_template: Path | None = None


def _make_template() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="hub-migrated-"))
    atexit.register(shutil.rmtree, directory, True)
    database = directory / "hub.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env["HUB_DATABASE_URL"] = f"sqlite+aiosqlite:///{database}"
    env["HUB_DATA_DIR"] = str(directory / ".hub")
    done = subprocess.run(
        hub_argv("db", "upgrade"),
        capture_output=True,
        text=True,
        env=env,
        cwd=directory,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not (directory / "hub.db-wal").exists(), "the upgrade left a WAL behind"
    return database


def migrated_sqlite(database: Path) -> None:
    """Put a copy of this process's migrated template at ``database`` (which must not exist)."""
    global _template
    with _lock:
        if _template is None:
            _template = _make_template()
    assert not database.exists(), database
    shutil.copyfile(_template, database)
