"""A migrated SQLite file for a live ``hub serve`` in a test's directory, without paying for
``hub db upgrade`` in every test.

The first call in a test process runs the real command (``hub db upgrade``, by
:func:`tests.deploy.serving.hub_command`) once, into a directory of its own, and later calls
copy the file it made: every live hub still starts on a database the command migrated, at a
file copy's cost instead of a subprocess that imports the hub and runs every migration (3-4 s
a test on the CI machine). Tests of the command itself
(``tests/test_smoke_run.py``, ``tests/cli/test_database_errors.py``…) still run it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

from tests.deploy.serving import free_port, hub_command

__all__ = ["migrated_sqlite"]

_lock = threading.Lock()
_template: Path | None = None


def _make_template() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="hub-migrated-"))
    atexit.register(shutil.rmtree, directory, True)
    hub_command(directory, free_port(), "db", "upgrade")  # into directory / "hub.db"
    assert not (directory / "hub.db-wal").exists(), "the upgrade left a WAL behind"
    return directory / "hub.db"


def migrated_sqlite(database: Path) -> None:
    """Put a copy of this process's migrated template at ``database`` (which must not exist)."""
    global _template
    with _lock:
        if _template is None:
            _template = _make_template()
    assert not database.exists(), database
    shutil.copyfile(_template, database)
