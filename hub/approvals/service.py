"""Approval rules (DESIGN §10.3, §15): bind, reuse, decide once, use once.

For an ``ask`` call the gateway asks, in order:

(a) :func:`use_approved` — an approved, unused, unexpired approval bound to the identical call is
    consumed by a conditional UPDATE that exactly one caller can win; the winner runs the call, a
    loser carries on with (b);
(b) :func:`denied_for` — a matching denial still inside its ``expires_at`` answers at once (no new
    request to pester approvers); else :func:`pending_for` reuses the matching live pending
    approval or creates one (one per binding: on PostgreSQL a transaction-scoped advisory lock on
    the binding serialises concurrent creators; SQLite's ``BEGIN IMMEDIATE`` already does), and
    the call waits for a decision for up to ``HUB_APPROVAL_WAIT_S`` in the replica's
    :class:`~hub.approvals.watch.DecisionWatch`, which reads the rows waited on (so a decision
    made on any replica is seen) in one query per tenant per tick.

Decisions (:func:`decide_approval`): only a live pending approval can be decided (409 otherwise);
only ``user`` principals decide (403 for agents and services whatever their grants), the agent
that asked never decides its own, and approving also needs ``tool:<handle>.<tool>`` : ``call``
with ``allow`` — no approving what one could not grant. Every decision is audited.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from hub.approvals import repository
from hub.approvals.repository import Binding
from hub.approvals.schemas import ApprovalDecision, ApprovalRead, ApprovalStatus
from hub.approvals.states import is_live_pending, status_of
from hub.approvals.watch import DecisionWatch
from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.crypto import CredentialUnavailable, Keyring, Sealed
from hub.core.db import Database
from hub.core.errors import Conflict, Forbidden, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.models import Approval

__all__ = [
    "ApprovalContext",
    "ApprovalRequest",
    "Binding",
    "TooManyPending",
    "approval_aad",
    "decide_approval",
    "denied_for",
    "get_approval",
    "list_approvals",
    "pending_for",
    "read_of",
    "recent_approvals",
    "use_approved",
]

AAD_PREFIX = b"hub/approval/v1"
#: the default of ``HUB_MAX_PENDING_APPROVALS``
MAX_PENDING = 50


class TooManyPending(Exception):
    """The agent has as many live pending approvals as it may: no new one until one of them is
    decided or expires, ``retry_after_s`` from now at the latest."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__("too many pending approvals")
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ApprovalContext:
    """What approvals need from the app: the keyring and the three lifetimes (DESIGN §2)."""

    keyring: Keyring
    ttl_s: float  # HUB_APPROVAL_TTL_S: how long a pending approval lives
    use_s: float  # HUB_APPROVAL_USE_S: how long an approval may be used after it was given
    wait_s: float  # HUB_APPROVAL_WAIT_S: how long an ask call waits for a decision
    max_pending: int = MAX_PENDING  # HUB_MAX_PENDING_APPROVALS: an agent's live pending ones
    watch: DecisionWatch = field(default_factory=DecisionWatch)  # where ask calls wait


@dataclass(frozen=True)
class ApprovalRequest:
    """An ``ask`` call to bind an approval to, with what approvers are shown."""

    binding: Binding
    handle: str
    tool_name: str
    wire_name: str
    arguments: dict[str, Any]
    catalog_version: int
    drift: dict[str, Any] | None = None


def approval_aad(tenant_id: uuid.UUID, approval_id: uuid.UUID) -> bytes:
    return b"".join((AAD_PREFIX, tenant_id.bytes, approval_id.bytes))


def _arguments_of(keyring: Keyring, row: Approval) -> dict[str, Any] | None:
    """The call's arguments, or None once erased (:mod:`hub.approvals.erasure`) or when their
    key has left the keyring: approvals live minutes (``HUB_APPROVAL_TTL_S`` +
    ``HUB_APPROVAL_USE_S``), so ``hub crypto rotate`` does not rewrap them; an old row stays
    readable, without its arguments (README, "Rotate keys")."""
    if not row.arguments_key_id:
        return None
    sealed = Sealed(
        row.arguments_key_id, bytes(row.arguments_nonce), bytes(row.arguments_ciphertext)
    )
    try:
        plain = keyring.decrypt(sealed, approval_aad(row.tenant_id, row.id))
    except CredentialUnavailable:
        return None
    value: dict[str, Any] = json.loads(plain)
    return value


def read_of(keyring: Keyring, row: Approval, now: datetime | None = None) -> ApprovalRead:
    return ApprovalRead(
        id=row.id,
        status=status_of(row, now or clock.now()),
        deployment_id=row.deployment_id,
        agent_id=row.agent_id,
        server=row.handle,
        tool=row.tool_name,
        wire_name=row.wire_name,
        grant_key=row.grant_key,
        arguments=_arguments_of(keyring, row),
        arguments_erased=not row.arguments_key_id,
        arguments_sha256=row.arguments_sha256,
        tool_sha256=row.tool_sha256,
        catalog_version=row.catalog_version,
        requested_at=row.requested_at,
        expires_at=row.expires_at,
        decided_by=row.decided_by,
        decided_at=row.decided_at,
        note=row.note,
        use_by=row.use_by,
        used_at=row.used_at,
        drift=row.drift,
    )


# --- the gateway's side ------------------------------------------------------------------


async def use_approved(db: Database, tenant_id: TenantId, binding: Binding) -> uuid.UUID | None:
    """Rule (a): consume a usable approval of ``binding``; its id, or None (none, or lost).

    One conditional ``UPDATE`` (:func:`~hub.approvals.repository.use`) finds the newest usable
    approval, marks it used and returns its id, and decides alone who wins, so on PostgreSQL it
    runs as one statement that commits on its own (:meth:`~hub.core.db.Database.reads`, as the
    audit writer's appends): one round trip on an approved call, with no ``BEGIN`` and
    ``COMMIT`` around it. On SQLite it takes the write lock in a transaction of its own, as
    every write there does, so a read first spares the lock to the calls that have nothing to
    use (every first ``ask``)."""
    now = clock.now()
    if db.is_sqlite:
        async with db.reads() as session:
            if not await repository.usable(session, tenant_id, binding, now):
                return None
    async with _consuming(db) as session:
        return await repository.use(session, tenant_id, binding, now)


def _consuming(db: Database) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
    return db.session(write=True) if db.is_sqlite else db.reads()


async def denied_for(db: Database, tenant_id: TenantId, binding: Binding) -> Approval | None:
    """A denial of ``binding`` still inside its ``expires_at``: the same call gets it at once."""
    now = clock.now()
    async with db.session(write=False) as session:
        rows = await repository.matching(session, tenant_id, binding, ("denied",))
    return next((row for row in rows if row.expires_at > now), None)


def _lock_key(*parts: object) -> int:
    """A PostgreSQL advisory lock's key for what ``parts`` name."""
    raw = "|".join(map(str, parts))
    return int.from_bytes(hashlib.sha256(raw.encode()).digest()[:8], "big", signed=True)


async def _lock(session: AsyncSession, *parts: object) -> None:
    """Hold the advisory lock of ``parts`` to the end of the transaction (PostgreSQL)."""
    await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(*parts)})


async def pending_for(
    db: Database, ctx: ApprovalContext, tenant_id: TenantId, request: ApprovalRequest
) -> Approval:
    """The live pending approval of the request's binding, reused, or a new one."""
    async with db.session(write=True) as session:
        binding = request.binding
        if not db.is_sqlite:
            await _lock(
                session,
                tenant_id,
                binding.deployment_id,
                binding.agent_id,
                binding.grant_key,
                binding.arguments_sha256,
                binding.tool_sha256,
            )
        now = clock.now()
        rows = await repository.matching(session, tenant_id, request.binding, ("pending",))
        live = next((row for row in rows if is_live_pending(row, now)), None)
        if live is not None:
            return live
        await _within_bound(session, ctx, tenant_id, request.binding.agent_id, now, db.is_sqlite)
        return await _create(session, ctx, tenant_id, request, now)


async def _within_bound(
    session: AsyncSession,
    ctx: ApprovalContext,
    tenant_id: TenantId,
    agent_id: uuid.UUID,
    now: datetime,
    sqlite: bool,
) -> None:
    """:class:`TooManyPending` when the agent already has ``ctx.max_pending`` live pending
    approvals. Each holds the call's arguments (up to ``HUB_MAX_REQUEST_BYTES``), and an agent
    that changed its arguments at every call made a new one each time, for approvers to wade
    through and the database to keep (stop 44). On PostgreSQL the agent's own lock, taken after
    the binding's (always in that order), makes two new approvals count one after the other."""
    if not sqlite:
        await _lock(session, tenant_id, agent_id)
    count, first = await repository.live_pending_of_agent(session, tenant_id, agent_id, now)
    if count >= ctx.max_pending:
        wait = (first - now).total_seconds() if first is not None else 1.0
        raise TooManyPending(max(1, math.ceil(wait)))


async def _create(
    session: AsyncSession,
    ctx: ApprovalContext,
    tenant_id: TenantId,
    request: ApprovalRequest,
    now: datetime,
) -> Approval:
    approval_id = uuid.uuid4()
    arguments = json.dumps(request.arguments, sort_keys=True, separators=(",", ":"))
    sealed = ctx.keyring.encrypt(arguments, approval_aad(tenant_id.value, approval_id))
    binding = request.binding
    row = Approval(
        id=approval_id,
        tenant_id=tenant_id.value,
        deployment_id=binding.deployment_id,
        agent_id=binding.agent_id,
        grant_key=binding.grant_key,
        handle=request.handle,
        tool_name=request.tool_name,
        wire_name=request.wire_name,
        arguments_key_id=sealed.key_id,
        arguments_nonce=sealed.nonce,
        arguments_ciphertext=sealed.ciphertext,
        arguments_sha256=binding.arguments_sha256,
        tool_sha256=binding.tool_sha256,
        catalog_version=request.catalog_version,
        status="pending",
        requested_at=now,
        expires_at=now + timedelta(seconds=ctx.ttl_s),
        drift=request.drift,
    )
    session.add(row)
    await session.flush()
    return row


# --- the REST side -------------------------------------------------------------------------


async def get_approval(
    session: AsyncSession, ctx: ApprovalContext, tenant_id: TenantId, approval_id: uuid.UUID
) -> ApprovalRead:
    row = await repository.get_approval(session, tenant_id, approval_id)
    if row is None:
        raise NotFound("approval not found")
    return read_of(ctx.keyring, row)


async def list_approvals(
    session: AsyncSession,
    ctx: ApprovalContext,
    access: TenantAccess,
    params: PageParams,
    *,
    status: ApprovalStatus | None,
    deployment_id: uuid.UUID | None,
    agent_id: uuid.UUID | None,
) -> Page[ApprovalRead]:
    now = clock.now()
    page = await repository.list_approvals(
        session,
        access.tenant_id,
        params,
        now=now,
        status=status,
        deployment_id=deployment_id,
        agent_id=agent_id,
    )
    return Page(
        items=[read_of(ctx.keyring, row, now) for row in page.items], next_cursor=page.next_cursor
    )


async def recent_approvals(
    session: AsyncSession, ctx: ApprovalContext, access: TenantAccess, limit: int
) -> list[ApprovalRead]:
    """The tenant's newest ``limit`` approvals that are no longer pending, newest first."""
    now = clock.now()
    rows = await repository.recent_decided(session, access.tenant_id, now=now, limit=limit)
    return [read_of(ctx.keyring, row, now) for row in rows]


async def decide_approval(
    session: AsyncSession,
    ctx: ApprovalContext,
    access: TenantAccess,
    approval_id: uuid.UUID,
    data: ApprovalDecision,
) -> ApprovalRead:
    if access.caller.kind != "user":
        raise Forbidden("only people decide approvals")
    row = await repository.get_approval(session, access.tenant_id, approval_id)
    if row is None:
        raise NotFound("approval not found")
    if row.agent_id == access.actor_id:
        raise Forbidden("the agent that asked may not decide its own approval")
    approve = data.decision == "approve"
    if approve:  # no approving what one could not grant
        await access.require(row.grant_key, "call")
    if approve and _arguments_of(ctx.keyring, row) is None:
        raise Conflict("the call's arguments cannot be read (their key left the keyring)")
    now = clock.now()
    decided = await repository.decide(
        session,
        access.tenant_id,
        approval_id,
        approve=approve,
        decided_by=access.actor_id,
        note=data.note,
        now=now,
        use_by=now + timedelta(seconds=ctx.use_s),
    )
    if not decided:
        await session.refresh(row)  # what it is now: decided by someone else, used or expired
        raise Conflict(
            f"only a live pending approval can be decided; this one is {status_of(row, now)}"
        )
    await session.refresh(row)
    await record_for(
        session,
        access,
        Action.APPROVAL_DECIDE,
        f"approval:{approval_id}",
        {
            "decision": data.decision,
            "grant_key": row.grant_key,
            "deployment_id": str(row.deployment_id),
        },
    )
    return read_of(ctx.keyring, row, now)
