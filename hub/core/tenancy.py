"""``TenantId``: a tenant id that only authentication can mint (tenant isolation by construction).

Repositories of tenant-owned tables accept only a ``TenantId``, never a bare UUID, so a query cannot
be scoped by an id the caller typed into a path or a body. The class cannot be constructed; it is
minted in exactly three places, each greppable and checked by a test
(``tests/core/test_tenancy.py``):

- authentication, for the caller's own tenant (``hub/auth``);
- the platform admin's path resolution, after the tenant in the path was found to exist;
- :func:`system_scope`, for CLI and background jobs that act across tenants on purpose.
"""

from __future__ import annotations

import uuid
from typing import Any, NoReturn, TypeVar

from sqlalchemy import Select, bindparam, select

__all__ = ["TENANT_PARAM", "TenantId", "scoped", "scoped_template", "system_scope", "tenant_params"]

TENANT_PARAM = "tenant_id"

_M = TypeVar("_M")


class TenantId:
    """An authenticated tenant id. Use ``.value`` for the UUID."""

    __slots__ = ("_value",)
    _value: uuid.UUID

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        raise TypeError("TenantId is minted by authentication, not constructed")

    @classmethod
    def _mint(cls, value: uuid.UUID) -> TenantId:
        obj = object.__new__(cls)
        object.__setattr__(obj, "_value", value)
        return obj

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("TenantId is immutable")

    @property
    def value(self) -> uuid.UUID:
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TenantId) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("TenantId", self._value))

    def __repr__(self) -> str:
        return f"TenantId({self._value})"

    def __str__(self) -> str:
        return str(self._value)


def system_scope(tenant_id: uuid.UUID, *, reason: str) -> TenantId:
    """Mint a ``TenantId`` for a job that is not a request (CLI, workers); ``reason`` says why."""
    if not reason:
        raise ValueError("system_scope needs a reason")
    return TenantId._mint(tenant_id)


def scoped(model: type[_M], tenant_id: TenantId) -> Select[_M]:
    """``SELECT model WHERE model.tenant_id = :tenant``, the start of every tenant-owned query."""
    if not isinstance(tenant_id, TenantId):  # a bare UUID is a bug, not a scope
        raise TypeError("scoped() needs a TenantId")
    column = model.__table__.c.tenant_id  # type: ignore[attr-defined]
    return select(model).where(column == tenant_id.value)


def scoped_template(model: type[_M]) -> Select[_M]:
    """``SELECT model WHERE model.tenant_id = :tenant_id`` with the tenant as a bound parameter.

    For queries on the request path, built once at import and executed with
    :func:`tenant_params`: building a statement costs more than running it through SQLAlchemy's
    compiled cache. The scope is as strict as :func:`scoped`'s: the parameter is only filled
    from a ``TenantId``.
    """
    column = model.__table__.c.tenant_id  # type: ignore[attr-defined]
    return select(model).where(column == bindparam(TENANT_PARAM))


def tenant_params(tenant_id: TenantId, **params: Any) -> dict[str, Any]:
    """The parameters of a :func:`scoped_template` query: the tenant plus ``params``."""
    if not isinstance(tenant_id, TenantId):  # a bare UUID is a bug, not a scope
        raise TypeError("tenant_params() needs a TenantId")
    return {TENANT_PARAM: tenant_id.value, **params}
