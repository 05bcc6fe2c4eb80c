"""Every approvals query. Tenant-owned queries start from ``scoped(…, TenantId)``, or, for the
gateway's statements built once, bind the tenant from a ``TenantId`` (``tenant_params``); the two
conditional UPDATEs (use, decide) are what make an approval single use and decided once."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Select, Table, bindparam, func, not_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from hub.approvals.schemas import ApprovalStatus
from hub.approvals.states import status_condition
from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.statements import read_row, write_alone_returning
from hub.core.tenancy import TENANT_PARAM, TenantId, scoped, scoped_template, tenant_params
from hub.models import Approval

__all__ = [
    "Binding",
    "any_arguments_to_erase",
    "count_pending_all_tenants",
    "count_pending_every_tenant",
    "decide",
    "erase_arguments",
    "get_approval",
    "get_approvals",
    "list_approvals",
    "live_pending_of_agent",
    "matching",
    "recent_decided",
    "usable",
    "use",
]


@dataclass(frozen=True)
class Binding:
    """What an approval is bound to: only the identical call on the identical tool matches."""

    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    grant_key: str
    arguments_sha256: str
    tool_sha256: str


async def get_approval(
    session: AsyncSession, tenant_id: TenantId, approval_id: uuid.UUID
) -> Approval | None:
    query = scoped(Approval, tenant_id).where(Approval.id == approval_id)
    return (await session.execute(query)).scalar_one_or_none()


#: how many ids one statement of :func:`get_approvals` names
IDS_PER_QUERY = 1000


async def get_approvals(
    session: AsyncSession, tenant_id: TenantId, approval_ids: Sequence[uuid.UUID]
) -> Sequence[Approval]:
    """The tenant's approvals among ``approval_ids`` (those that exist), in no order. Asked
    :data:`IDS_PER_QUERY` at a time: an ``IN`` list is one bound parameter per id, and both
    backends cap a statement's parameters (SQLite at 32,766, asyncpg at 32,767)."""
    found: list[Approval] = []
    for start in range(0, len(approval_ids), IDS_PER_QUERY):
        chunk = approval_ids[start : start + IDS_PER_QUERY]
        query = scoped(Approval, tenant_id).where(Approval.id.in_(chunk))
        found.extend((await session.execute(query)).scalars())
    return found


# The gateway's statements for an ``ask`` call, built once (building one costs more than
# running it through SQLAlchemy's compiled cache); the tenant is bound only by tenant_params().
_BOUND = (
    Approval.deployment_id == bindparam("deployment_id"),
    Approval.agent_id == bindparam("agent_id"),
    Approval.grant_key == bindparam("grant_key"),
    Approval.arguments_sha256 == bindparam("arguments_sha256"),
    Approval.tool_sha256 == bindparam("tool_sha256"),
)
_NEWEST_FIRST = (Approval.requested_at.desc(), Approval.id.desc())
_MATCHING = (
    scoped_template(Approval)
    .where(*_BOUND, Approval.status.in_(bindparam("statuses", expanding=True)))
    .order_by(*_NEWEST_FIRST)
    .limit(20)
)
_APPROVALS = cast(Table, Approval.__table__)
_A = _APPROVALS.c
#: usable now: approved, unused, inside its use window (the candidate's and the winner's test)
_USABLE = (_A.status == "approved", _A.used_at.is_(None), _A.use_by > bindparam("now"))
_USABLE_OF_BINDING = (
    select(_A.id)
    .where(
        # an UPDATE takes a parameter named as a column for its SET clause: other names
        _A.tenant_id == bindparam("scope"),
        _A.deployment_id == bindparam("for_deployment"),
        _A.agent_id == bindparam("for_agent"),
        _A.grant_key == bindparam("for_grant_key"),
        _A.arguments_sha256 == bindparam("for_arguments"),
        _A.tool_sha256 == bindparam("for_tool"),
        *_USABLE,
    )
    .order_by(_A.requested_at.desc(), _A.id.desc())
    .limit(1)
)
#: the newest usable approval of the binding that no concurrent use holds (PostgreSQL skips a
#: row another transaction locked; SQLite's write lock lets one writer in at a time)
_CANDIDATE = _USABLE_OF_BINDING.with_for_update(skip_locked=True).scalar_subquery()
#: on the table, not the entity: the ORM's bulk-update machinery around an entity's UPDATE cost
#: a quarter of the consuming statement's CPU (in process, PostgreSQL: 486-508 against 372-386
#: µs with its session) for nothing, as no loaded object is synchronised. The candidate's test
#: is made again on the row it locked, so a use committed meanwhile leaves nothing to update.
_USE = (
    update(_APPROVALS)
    .where(_A.tenant_id == bindparam("scope"), _A.id == _CANDIDATE, *_USABLE)
    .values(status="used", used_at=bindparam("now"))
    .returning(_A.id)
)


def _binding_params(tenant_id: TenantId, binding: Binding, **more: object) -> dict[str, object]:
    return tenant_params(
        tenant_id,
        deployment_id=binding.deployment_id,
        agent_id=binding.agent_id,
        grant_key=binding.grant_key,
        arguments_sha256=binding.arguments_sha256,
        tool_sha256=binding.tool_sha256,
        **more,
    )


_LIVE_PENDING_OF_AGENT = select(func.count(), func.min(_A.expires_at)).where(
    _A.tenant_id == bindparam(TENANT_PARAM),
    _A.agent_id == bindparam("agent_id"),
    _A.status == "pending",
    _A.expires_at > bindparam("now"),
)


async def live_pending_of_agent(
    session: AsyncSession, tenant_id: TenantId, agent_id: uuid.UUID, now: datetime
) -> tuple[int, datetime | None]:
    """How many of the agent's approvals are pending and unexpired, and when the first of them
    expires (None when there are none)."""
    params = tenant_params(tenant_id, agent_id=agent_id, now=now)
    count, first = (await session.execute(_LIVE_PENDING_OF_AGENT, params)).one()
    return int(count), first


async def matching(
    session: AsyncSession, tenant_id: TenantId, binding: Binding, statuses: Sequence[str]
) -> Sequence[Approval]:
    """Rows bound to ``binding`` with a stored status in ``statuses``, newest first."""
    params = _binding_params(tenant_id, binding, statuses=list(statuses))
    return (await session.execute(_MATCHING, params)).scalars().all()


def _use_params(tenant_id: TenantId, binding: Binding, now: datetime) -> dict[str, object]:
    return {
        "scope": tenant_id.value,
        "for_deployment": binding.deployment_id,
        "for_agent": binding.agent_id,
        "for_grant_key": binding.grant_key,
        "for_arguments": binding.arguments_sha256,
        "for_tool": binding.tool_sha256,
        "now": now,
    }


async def usable(
    session: AsyncSession, tenant_id: TenantId, binding: Binding, now: datetime
) -> bool:
    """Whether ``binding`` has a usable approval now (a read: no lock taken, nothing used)."""
    return (
        await read_row(session, _USABLE_OF_BINDING, _use_params(tenant_id, binding, now))
        is not None
    )


async def use(
    session: AsyncSession, tenant_id: TenantId, binding: Binding, now: datetime
) -> uuid.UUID | None:
    """Mark the newest usable approval of ``binding`` used, in one statement: its id, for the
    one caller that wins it; None when there is none (or every one went to another caller)."""
    rows = await write_alone_returning(session, _USE, _use_params(tenant_id, binding, now))
    return rows[0].id if rows else None


async def decide(
    session: AsyncSession,
    tenant_id: TenantId,
    approval_id: uuid.UUID,
    *,
    approve: bool,
    decided_by: uuid.UUID,
    note: str | None,
    now: datetime,
    use_by: datetime,
) -> bool:
    """Decide a live pending approval; False when it is not (any more) one."""
    result = await session.execute(
        update(Approval)
        .where(
            Approval.tenant_id == tenant_id.value,
            Approval.id == approval_id,
            Approval.status == "pending",
            Approval.expires_at > now,
        )
        .values(
            status="approved" if approve else "denied",
            decided_by=decided_by,
            decided_at=now,
            note=note,
            use_by=use_by if approve else None,
        )
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def list_approvals(
    session: AsyncSession,
    tenant_id: TenantId,
    params: PageParams,
    *,
    now: datetime,
    status: ApprovalStatus | None = None,
    deployment_id: uuid.UUID | None = None,
    agent_id: uuid.UUID | None = None,
) -> Page[Approval]:
    query = scoped(Approval, tenant_id)
    if status is not None:
        query = query.where(status_condition(status, now))
    if deployment_id is not None:
        query = query.where(Approval.deployment_id == deployment_id)
    if agent_id is not None:
        query = query.where(Approval.agent_id == agent_id)
    return await fetch_page(session, query, params, order=(Approval.requested_at, Approval.id))


async def recent_decided(
    session: AsyncSession, tenant_id: TenantId, *, now: datetime, limit: int
) -> Sequence[Approval]:
    """The newest ``limit`` approvals that are no longer pending (decided, used or expired),
    newest first: one query, whatever the tenant's history."""
    query = (
        scoped(Approval, tenant_id)
        .where(not_(status_condition("pending", now)))
        .order_by(Approval.requested_at.desc(), Approval.id.desc())
        .limit(limit)
    )
    return (await session.execute(query)).scalars().all()


async def count_pending_all_tenants(session: AsyncSession, now: datetime) -> int:
    """Approvals pending and not expired at ``now``, in every tenant the session may see (one
    tenant under row-level security: :func:`hub.core.tenant_passes.every_tenant` walks them)."""
    query = select(func.count()).select_from(Approval).where(status_condition("pending", now))
    return int((await session.execute(query)).scalar_one())


_PENDING_OF_EVERY_TENANT = text("SELECT hub_pending_approvals(:now)")


async def count_pending_every_tenant(session: AsyncSession, now: datetime) -> int:
    """:func:`count_pending_all_tenants` over every tenant at once, by the ``SECURITY DEFINER``
    ``hub_pending_approvals()`` (PostgreSQL, migration 0904)."""
    return int((await session.execute(_PENDING_OF_EVERY_TENANT, {"now": now})).scalar_one())


def _held_past(tenant_id: TenantId, before: datetime) -> Select[uuid.UUID]:
    """The tenant's approvals that still hold their arguments and could last be used before
    ``before`` (a pending one until ``expires_at``, an approved one until ``use_by``), the
    longest past first; found by ``ix_approvals_tenant_held_arguments``."""
    return (
        select(Approval.id)
        .where(
            Approval.tenant_id == tenant_id.value,
            Approval.arguments_key_id != "",
            Approval.expires_at < before,
            func.coalesce(Approval.use_by, Approval.expires_at) < before,
        )
        .order_by(Approval.expires_at)
    )


async def any_arguments_to_erase(
    session: AsyncSession, tenant_id: TenantId, before: datetime
) -> bool:
    """Whether :func:`erase_arguments` would erase anything: read first, so that a tenant with
    nothing to erase costs the erasure pass no write transaction."""
    found = await session.execute(_held_past(tenant_id, before).limit(1))
    return found.first() is not None


async def erase_arguments(
    session: AsyncSession, tenant_id: TenantId, before: datetime, limit: int
) -> int:
    """Erase the arguments of at most ``limit`` of the tenant's approvals :func:`_held_past`
    ``before``: how many were erased."""
    held = _held_past(tenant_id, before).limit(limit)
    result = await session.execute(
        update(Approval)
        .where(Approval.tenant_id == tenant_id.value, Approval.id.in_(held.scalar_subquery()))
        .values(arguments_key_id="", arguments_nonce=b"", arguments_ciphertext=b"")
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
