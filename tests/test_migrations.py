"""Migrations build the schema from empty to head and back, on both backends, without drift."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from hub.core.db import create_engine
from hub.core.migrations import downgrade
from tests.support.databases import (
    fresh_postgres,
    migrate,
    postgres_required,
    postgres_url,
    table_names,
)


def _scratch_url(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'migrations.db'}"
    url = postgres_url("_migrations")
    try:
        fresh_postgres(url)
    except (OSError, TimeoutError) as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required but unreachable: {exc!r}")
        pytest.skip(f"PostgreSQL unreachable: {exc!r}")
    return url


async def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
    finally:
        await engine.dispose()
    return set(names) - {"alembic_version"}


def _run_in_thread(fn: object, *args: str) -> None:
    import threading

    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn(*args)  # type: ignore[operator]
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_upgrade_to_head_then_downgrade_to_base(backend: str, tmp_path: Path) -> None:
    url = _scratch_url(backend, tmp_path)
    migrate(url)
    assert await _tables(url) == set(table_names())
    _run_in_thread(downgrade, url, "base")
    assert await _tables(url) == set()
    migrate(url)
    assert await _tables(url) == set(table_names())


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_no_model_drift(backend: str, tmp_path: Path) -> None:
    from alembic import command

    from hub.core.migrations import alembic_config

    url = _scratch_url(backend, tmp_path)
    migrate(url)
    _run_in_thread(command.check, alembic_config(url))  # type: ignore[arg-type]
