"""``hub db upgrade`` and ``hub serve`` turn a refused connection or login into one line.

A database that refuses the connection (nothing listens on the port) or the login (no such
role) ends the command with exit 1 and exactly one line on stderr naming the database, without
its password, and the cause — never a traceback. Nothing leaves the machine: the URLs are
loopback.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from sqlalchemy.engine import make_url

from tests.deploy.serving import free_port, hub_env, running_hub
from tests.support.databases import postgres_required, postgres_url, scratch_url


def _run(tmp_path: Path, database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = hub_env(tmp_path, free_port(), HUB_DATABASE_URL=database_url)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def _postgres_answers() -> bool:
    url = make_url(postgres_url())
    try:
        with socket.create_connection((url.host or "127.0.0.1", url.port or 5432), timeout=2):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("command", [("db", "upgrade"), ("serve",)], ids=["upgrade", "serve"])
def test_a_refused_connection_is_one_line(tmp_path: Path, command: tuple[str, ...]) -> None:
    closed = free_port()  # nothing listens there
    done = _run(tmp_path, f"postgresql+asyncpg://hub:hunter2@127.0.0.1:{closed}/hub", *command)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    shown = f"postgresql+asyncpg://hub:***@127.0.0.1:{closed}/hub"  # the password hidden
    assert done.stderr.startswith(f"hub: cannot use the database {shown}: connection refused")
    assert "hunter2" not in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


# with HUB_TEST_REQUIRE_POSTGRES (CI) an unreachable server fails the test instead
@pytest.mark.skipif(
    not postgres_required() and not _postgres_answers(), reason="no PostgreSQL on the test URL"
)
def test_a_refused_login_is_one_line(tmp_path: Path) -> None:
    url = make_url(postgres_url()).set(username="no_such_role_for_hub", password="pw")
    done = _run(tmp_path, url.render_as_string(hide_password=False), "db", "upgrade")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "the login was refused" in done.stderr
    assert "no_such_role_for_hub" in done.stderr
    assert ":pw@" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_url_the_hub_cannot_use_is_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, "nosuchdialect://x", "db", "upgrade")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("hub: HUB_DATABASE_URL cannot be used:")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_bootstrap_on_a_database_without_the_schema_is_one_line(
    tmp_path: Path, backend: str
) -> None:
    """A database the migrations never ran on: ``hub bootstrap`` ended in a 600-line traceback;
    it now says what to run. (``hub serve`` still starts there, with ``/readyz`` 503, so a
    replica may start before its migration job ends.)"""
    url = scratch_url(backend, tmp_path, "unmigrated")
    done = _run(tmp_path, url, "bootstrap", "--force")
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("hub: the database ")
    assert "run `hub db upgrade` first" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stdout == ""  # no key was made


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_serve_on_a_database_without_the_schema_starts_and_says_so(
    tmp_path: Path, backend: str
) -> None:
    """``hub serve`` starts there (a replica may start before its migration job ends), answers
    ``/readyz`` 503, and says on its first line what is missing — it used to say nothing until a
    request logged "database unavailable"."""
    url = scratch_url(backend, tmp_path, "unmigrated")
    with running_hub(tmp_path, HUB_DATABASE_URL=url) as hub:
        ready = httpx2.get(f"{hub.base_url}/readyz", timeout=10)
    # it was a 500 on PostgreSQL: a missing table is a DBAPIError no handler took
    assert ready.status_code == 503, ready.text
    assert "run `hub db upgrade`" in ready.json()["error"]["message"]
    [warning] = hub.other_lines
    assert warning.startswith("hub: warning: the database "), warning
    assert "holds no hub schema yet" in warning
    assert "`hub db upgrade`" in warning


def test_serve_on_a_migrated_database_warns_of_nothing(tmp_path: Path) -> None:
    url = scratch_url("sqlite", tmp_path, "migrated")
    assert _run(tmp_path, url, "db", "upgrade").returncode == 0
    with running_hub(tmp_path, HUB_DATABASE_URL=url) as hub:
        assert httpx2.get(f"{hub.base_url}/readyz", timeout=10).status_code == 200
    assert hub.other_lines == []


def test_a_migrated_database_passes_the_check(tmp_path: Path) -> None:
    """The check reads the schema's revision: after ``hub db upgrade`` bootstrap goes on."""
    url = scratch_url("sqlite", tmp_path, "migrated")
    assert _run(tmp_path, url, "db", "upgrade").returncode == 0
    done = _run(tmp_path, url, "bootstrap")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hub_")


def test_a_database_newer_than_the_code_is_left_as_it_is(tmp_path: Path) -> None:
    """A rollback runs the previous version's ``hub db upgrade`` (compose's migrate service, a
    chart's migration job) on the next version's schema: it failed with alembic's "Can't locate
    revision" (exit 2), and the previous version never started, though it runs on that schema.
    Asked for an unknown revision by name, it still fails."""
    url = scratch_url("sqlite", tmp_path, "newer")
    assert _run(tmp_path, url, "db", "upgrade").returncode == 0
    with sqlite3.connect(tmp_path / "newer.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    done = _run(tmp_path, url, "db", "upgrade")
    assert done.returncode == 0, done.stderr
    assert "hub: database at 9999, newer than this code's newest migration" in done.stderr
    assert "Traceback" not in done.stderr
    assert _run(tmp_path, url, "db", "upgrade", "9998").returncode == 2
