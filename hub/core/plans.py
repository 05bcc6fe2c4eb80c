"""A Core statement compiled once per dialect into what a driver cursor takes (a :class:`Plan`),
for :mod:`hub.core.plainreads`: its SQL, its parameters in order with their bind processors, its
columns' result processors and a row type. Built from SQLAlchemy's public parts (``compile``,
``dialect_impl``, ``bind_processor``/``result_processor``); a statement those cannot describe
exactly has no plan, and its callers run it through the session.
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["Plan", "plan_of"]

Processor = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Plan:
    """A statement compiled for one dialect: its SQL, its parameters in order (with the values
    the statement fixes itself, such as literals) and processors, its columns' processors and
    the row type (a named tuple of the column keys: attributes, indexing and unpacking, as the
    callers use SQLAlchemy's rows)."""

    sql: str
    names: tuple[str, ...]
    fixed: Mapping[str, Any]
    binds: tuple[Processor | None, ...]
    results: tuple[tuple[int, Processor], ...]  # the columns that have one, by position
    row: type[tuple[Any, ...]]
    dml: bool = False  # an INSERT, UPDATE or DELETE: :func:`execute` runs it
    returning: bool = False  # a ``dml`` with RETURNING (its columns): :func:`execute_returning`

    def arguments(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        values = []
        for name, process in zip(self.names, self.binds, strict=True):
            value = params[name] if name in params else self.fixed[name]
            values.append(value if process is None or value is None else process(value))
        return tuple(values)

    def rows(self, raw: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        make = self.row._make  # type: ignore[attr-defined]
        out: list[tuple[Any, ...]] = []
        for record in raw:
            values = list(record)
            for index, process in self.results:
                values[index] = process(values[index])
            out.append(make(values))
        return out


_plans: dict[str, weakref.WeakKeyDictionary[Executable, Plan | None]] = {}


def plan_of(statement: Executable, dialect: Dialect) -> Plan | None:
    """The statement's plan for ``dialect`` (made once), or None for a statement this module
    does not run (no positional parameters, a parameter that appears twice in the parameter
    list, an expanding ``IN``, no columns unless it is an ``INSERT``, ``UPDATE`` or ``DELETE``):
    its callers then run it through the session. A write's ``RETURNING`` columns are its
    columns."""
    plans = _plans.setdefault(dialect.name, weakref.WeakKeyDictionary())
    if statement not in plans:
        plans[statement] = _plan(statement, dialect)
    return plans[statement]


def _plan(statement: Executable, dialect: Dialect) -> Plan | None:
    compiled = cast(SQLCompiler, cast(ClauseElement, statement).compile(dialect=dialect))
    names = tuple(compiled.positiontup or ())
    columns = list(getattr(statement, "selected_columns", ()))
    dml = compiled.isinsert or compiled.isupdate or compiled.isdelete
    returning = bool(dml and compiled.effective_returning)
    if returning:
        columns = list(compiled.effective_returning or ())
    if not (columns or dml) or not dialect.positional or len(names) != len(set(names)):
        return None
    binds = compiled.binds
    if any(binds[name].expanding for name in names):
        return None
    bind_processors = tuple(
        binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names
    )
    processors = [c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns]
    result_processors = tuple((i, p) for i, p in enumerate(processors) if p is not None)
    keys = [
        str(getattr(c, "key", None) or getattr(c, "name", "") or f"c{i}")
        for i, c in enumerate(columns)
    ]
    row = namedtuple("PlainRow", keys, rename=True)  # type: ignore[misc]
    fixed = {name: binds[name].effective_value for name in names if not binds[name].required}
    return Plan(
        compiled.string, names, fixed, bind_processors, result_processors, row, dml, returning
    )
