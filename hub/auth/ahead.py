"""The caller's key and its route's first read in one statement (PostgreSQL; see
:mod:`hub.core.readahead`).

The statement, made once per :class:`~hub.core.readahead.ReadAhead`::

    SELECT k.*, ahead.*
    FROM hub_auth_key(:key_id) AS k
    LEFT JOIN LATERAL (<the route's read, its tenant parameter replaced by k.tenant_id>) AS ahead
        ON k.key_hash = :key_hash

``hub_auth_key`` is the lookup every request makes (a ``SECURITY DEFINER`` function that sets
the connection's row-level security scope to the key's tenant). The route's read runs as the
app's role, under row-level security, in the key's own tenant, and its row joins only when the
stored hash equals the one the hub computed from the presented key. Authentication itself is
unchanged (:func:`hub.auth.service.authenticate`: constant-time compare, revocation, expiry,
disabled principal or tenant): the join saves the second round trip, and a key that fails never
sees a row. The read is correlated with the key's row, so PostgreSQL reads the key first (a
nested loop), and its row has the key's tenant whatever scope the connection had before; a row
it did not find is read again by the route (:func:`hub.core.readahead.recall` answers found rows
only).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import Select, bindparam, column, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.visitors import replacement_traverse

from hub.auth import repository
from hub.core import plainreads
from hub.core.readahead import ReadAhead
from hub.core.statements import read_scoping_rows
from hub.core.tenancy import TENANT_PARAM

__all__ = ["find_key_ahead"]

_SCOPE = len(repository.DEFINER_KEY_NAMES) - 1
_FOUND = "hub_ahead_found"
_OWN_PARAMS = frozenset({"key_id", "key_hash"})

_statements: weakref.WeakKeyDictionary[ReadAhead, Select[Any]] = weakref.WeakKeyDictionary()


def _statement(spec: ReadAhead) -> Select[Any]:
    """The key's lookup joined with ``spec``'s read (made once per spec)."""
    made = _statements.get(spec)
    if made is not None:
        return made
    if _OWN_PARAMS & {*spec.path, *spec.body}:
        raise ValueError(f"a read ahead cannot name {sorted(_OWN_PARAMS)}")
    key = func.hub_auth_key(bindparam("key_id")).table_valued(
        *(
            column(name, typed.type)
            for name, typed in zip(
                repository.DEFINER_KEY_NAMES, repository.DEFINER_KEY_COLUMNS, strict=True
            )
        ),
        name="k",
    )

    def tenant_of_key(element: Any, **_kw: Any) -> Any:
        if isinstance(element, BindParameter) and element.key == TENANT_PARAM:
            return key.c.tenant_id
        return None

    read = cast("Select[Any]", replacement_traverse(spec.statement, {}, tenant_of_key))
    ahead = read.add_columns(true().label(_FOUND)).lateral("ahead")
    made = select(*key.c, *ahead.c).select_from(
        key.outerjoin(ahead, key.c.key_hash == bindparam("key_hash"))
    )
    _statements[spec] = made
    return made


async def find_key_ahead(
    session: AsyncSession,
    key_id: str,
    key_hash: str,
    spec: ReadAhead,
    params: Mapping[str, Any],
) -> tuple[repository.KeyRecord | None, Any]:
    """The key ``key_id`` (as :func:`hub.auth.repository.find_key`) and the row ``spec``'s read
    found with ``params`` in the key's tenant (None when it found none, or the stored hash is not
    ``key_hash``). On another database than PostgreSQL: the key alone, the row None."""
    if session.get_bind().dialect.name != "postgresql":
        return await repository.find_key(session, key_id), None
    statement = _statement(spec)
    rows = await read_scoping_rows(
        session, statement, {"key_id": key_id, "key_hash": key_hash, **params}, _SCOPE
    )
    values = tuple(rows[0])  # one row always: the function returns one, the join is outer
    record = repository.key_record_of(values)
    if record is None or not values[-1]:
        return record, None
    plan = plainreads.plan_of(spec.statement, session.get_bind().dialect)
    if plan is None:
        return record, None
    return record, plan.row._make(values[_SCOPE + 1 : -1])  # type: ignore[attr-defined]
