"""A route's first read sent with the caller's key: one round trip where there were two.

On PostgreSQL every authenticated request reads its key first (``hub_auth_key``, which sets the
connection's row-level security scope), and an item route then reads its object: two round
trips, each about 70 µs of the hub's CPU (asyncpg's protocol, the socket calls, the event loop's
wake-ups) on top of the statement. A route marked with :func:`read_ahead` names that read (a
:class:`ReadAhead`: a Core select of plain columns with the tenant parameter
:data:`~hub.core.tenancy.TENANT_PARAM`, the rest taken from its path or its JSON body), and
authentication sends it joined to the key's lookup (:func:`hub.auth.ahead.find_key_ahead`): in
the key's own tenant, and only when the stored hash is the one computed from the presented key.
The row it found is remembered on the request's session (:func:`remember`), and the route's own
read of the same statement with the same parameters (:func:`hub.core.statements.read_row`)
takes it from there (:func:`recall`) instead of sending it.

What a remembered row may answer, and so what can never differ from a read sent then:

- the same statement object with equal parameters, the tenant included: a request whose path
  names another tenant than the caller's (a platform admin's, or a 404) never matches;
- once, and only on a read session outside a transaction (whose statements each commit on their
  own; :func:`hub.core.statements.read_row` asks only then): a write request, or a second
  read, sends its own;
- a row found only: an absent one is read again (the 404 path pays the second round trip; the
  answer never depends on when, within the joined statement, the scope took effect).

SQLite reads locally in microseconds (no round trip to save): there the route reads as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.visitors import iterate

from hub.core.tenancy import TENANT_PARAM

__all__ = ["ReadAhead", "read_ahead", "read_ahead_of", "recall", "remember"]

_MARK = "_hub_read_ahead"
_REMEMBERED = "hub.read_ahead"  # in ``session.info``: {(statement, params): row}
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, eq=False)
class ReadAhead:
    """A read a route makes first: ``statement`` (plain columns, one row at most) with its
    tenant parameter and, for each other bind parameter, where its value is: a path parameter
    (``path``: bind name → path parameter) or a field of the JSON object the request's body is
    (``body``: bind name → field). Each value is converted to its bind's Python type (a UUID
    from its text, as the route's own validation does); one that does not convert, or is
    missing, or does not match its pattern (``patterns``), or holds a NUL, leaves the request
    without a read ahead (its route reads, or refuses it, itself): the joined statement is only
    ever sent with values the route's own read would have been sent with."""

    statement: Select[Any]
    path: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, str] = field(default_factory=dict)
    #: the pattern each text parameter must match in full, as the route checks it before it
    #: reads (a value that does not is the route's to refuse, never sent ahead)
    patterns: Mapping[str, re.Pattern[str]] = field(default_factory=dict)
    _types: dict[str, type] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        types = {
            bind.key: bind.type.python_type
            for bind in iterate(self.statement)
            if isinstance(bind, BindParameter)
        }
        named = {TENANT_PARAM, *self.path, *self.body}
        if set(types) != named:
            raise ValueError(f"the read's parameters are {sorted(types)}, not {sorted(named)}")
        if not set(self.patterns) <= named:
            raise ValueError(f"patterns for parameters the read has not: {sorted(self.patterns)}")
        object.__setattr__(self, "_types", types)

    def params(self, path_params: Mapping[str, Any], body: Any) -> dict[str, Any] | None:
        """The statement's parameters other than the tenant, from a request's path parameters
        and its JSON body (None: the read is not sent ahead)."""
        params = {}
        for bind, name in self.path.items():
            params[bind] = path_params.get(name)
        for bind, name in self.body.items():
            params[bind] = body.get(name) if isinstance(body, dict) else None
        for bind, value in params.items():
            if not isinstance(value, str):
                return None
            pattern = self.patterns.get(bind)
            if "\x00" in value or (pattern is not None and not pattern.fullmatch(value)):
                return None  # no database takes a NUL in text; the route refuses the rest
            try:
                params[bind] = self._types[bind](value)
            except ValueError:
                return None
        return params


def read_ahead(spec: ReadAhead) -> Callable[[F], F]:
    """Mark an endpoint whose first read is ``spec``: authentication sends it with the key."""

    def mark(endpoint: F) -> F:
        setattr(endpoint, _MARK, spec)
        return endpoint

    return mark


def read_ahead_of(endpoint: object) -> ReadAhead | None:
    """The :class:`ReadAhead` an endpoint is marked with, or None."""
    spec: ReadAhead | None = getattr(endpoint, _MARK, None)
    return spec


def _key(statement: object, params: Mapping[str, Any]) -> tuple[object, ...]:
    return (statement, *sorted(params.items()))


def remember(session: AsyncSession, statement: object, params: Mapping[str, Any], row: Any) -> None:
    """Keep ``row``, found by ``statement`` with ``params``, for the session's next read of it."""
    session.info.setdefault(_REMEMBERED, {})[_key(statement, params)] = row


def recall(session: AsyncSession, statement: object, params: Mapping[str, Any]) -> Any:
    """The remembered row of ``statement`` with ``params`` (forgotten once given), or None."""
    remembered: dict[tuple[object, ...], Any] | None = session.info.get(_REMEMBERED)
    if not remembered:
        return None
    return remembered.pop(_key(statement, params), None)
