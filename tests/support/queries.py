"""What a request sends to the database: statements and pool checkouts, counted.

Statements come two ways: through SQLAlchemy's engine (its ``before_cursor_execute`` event) and
as plain reads past it (:mod:`hub.core.plainreads`, which reports each one it sends); both are
counted, in order."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

from hub.core import plainreads
from hub.core.db import Database

__all__ = [
    "TRANSACTION_CONTROL",
    "Checkouts",
    "count_checkouts",
    "count_engine_statements",
    "count_queries",
    "count_statements",
]

TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


@contextmanager
def count_engine_statements(db: Database) -> Iterator[list[str]]:
    """The statements sent through SQLAlchemy's engine alone (not the plain reads)."""
    statements: list[str] = []

    def listener(*args: Any) -> None:
        statements.append(str(args[2]))

    event.listen(db.engine.sync_engine, "before_cursor_execute", listener)
    try:
        yield statements
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", listener)


@contextmanager
def count_statements(db: Database) -> Iterator[list[str]]:
    """Every statement sent while the block runs, transaction control included."""
    with count_engine_statements(db) as statements, plainreads.observe(statements.append):
        yield statements


@contextmanager
def count_queries(db: Database) -> Iterator[list[str]]:
    """Statements sent to the database, transaction control (BEGIN, COMMIT…) left out."""
    with count_statements(db) as sent:
        statements: list[str] = []
        yield statements
    statements += [s for s in sent if not s.lstrip().upper().startswith(TRANSACTION_CONTROL)]


@dataclass
class Checkouts:
    """Connections taken from the pool (``count``) and the most held at once (``most``)."""

    count: int = 0
    out: int = 0
    most: int = 0
    connections: list[object] = field(default_factory=list)


@contextmanager
def count_checkouts(db: Database) -> Iterator[Checkouts]:
    seen = Checkouts()

    def checkout(*args: Any) -> None:
        seen.count += 1
        seen.out += 1
        seen.most = max(seen.most, seen.out)
        seen.connections.append(args[0])

    def checkin(*_args: Any) -> None:
        seen.out -= 1

    pool = db.engine.sync_engine.pool
    event.listen(pool, "checkout", checkout)
    event.listen(pool, "checkin", checkin)
    try:
        yield seen
    finally:
        event.remove(pool, "checkout", checkout)
        event.remove(pool, "checkin", checkin)
