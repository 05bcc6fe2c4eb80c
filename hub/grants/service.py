"""Grant rules: decisions for callers, grant CRUD and role templates (DESIGN §8). Policies are read
by :mod:`hub.grants.loading`; who may grant what is :mod:`hub.grants.authority`."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.errors import BadRequest, Conflict, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.grants import repository
from hub.grants.authority import (
    ensure_may_act_as,
    ensure_may_assign_role,
    ensure_may_confer,
    ensure_may_manage,
    is_tenant_admin,
)
from hub.grants.cache import PolicyCache
from hub.grants.conditions import parse_conditions
from hub.grants.effective import EffectiveCheck
from hub.grants.loading import current_policy, load_policy, policy_of
from hub.grants.patterns import PolicyError, check_action, validate_pattern
from hub.grants.policy import CompiledPolicy, Decision
from hub.grants.schemas import GrantCheck, GrantCreate, GrantDecision
from hub.grants.templates import ROLE_TEMPLATES
from hub.models import Grant

__all__ = [
    "CHECK_READ_AHEAD",
    "apply_role_template",
    "canonical_resource",
    "check_grant",
    "create_grant",
    "current_policy",
    "decide",
    "delete_grant",
    "ensure_may_act_as",
    "ensure_may_assign_role",
    "ensure_may_manage",
    "is_tenant_admin",
    "list_grants",
    "load_policy",
    "policy_of",
]

PLATFORM_ALLOW = Decision("allow", None)


async def _caller_policy(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess
) -> CompiledPolicy:
    """The caller's compiled policy: cached under the ``grants_version`` authentication read with
    the key on this request, so a change committed anywhere is a miss here at once."""
    caller = access.caller
    return await policy_of(
        session, cache, access.tenant_id, caller.principal_id, caller.grants_version
    )


async def decide(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess, resource: str, action: str
) -> Decision:
    """The caller's decision for ``action`` on ``resource`` (the platform admin is allowed);
    a policy that is not cached is read on the request's ``session``."""
    if access.caller.is_platform_admin:
        return PLATFORM_ALLOW
    policy = await _caller_policy(session, cache, access)
    return policy.decide(resource, action, clock.now())


def canonical_resource(resource: str, action: str) -> str:
    """The canonical pattern, with an action its kind has; 400 otherwise (DESIGN §8)."""
    try:
        canonical = validate_pattern(resource)
        check_action(canonical, action)
    except PolicyError as exc:
        raise BadRequest(str(exc)) from None
    return canonical


def _validated(data: GrantCreate) -> str:
    resource = canonical_resource(data.resource, data.action)
    try:
        parse_conditions(data.conditions)
    except PolicyError as exc:
        raise BadRequest(str(exc)) from None
    # a grant expired at creation would never apply (and a key's past expiry is refused alike)
    if data.expires_at is not None and data.expires_at <= clock.now():
        raise BadRequest("expires_at must be in the future")
    return resource


async def apply_role_template(
    session: AsyncSession,
    tenant_id: TenantId,
    principal_id: uuid.UUID,
    role: str | None,
    created_by: uuid.UUID | None,
) -> None:
    """Insert the role's grants as rows (the caller has already checked the right to assign it)."""
    if not role:
        return
    for resource, action, effect in ROLE_TEMPLATES[role]:
        session.add(
            Grant(
                id=uuid.uuid4(),
                tenant_id=tenant_id.value,
                principal_id=principal_id,
                resource=resource,
                action=action,
                effect=effect,
                conditions={},
                created_by=created_by,
                created_at=clock.now(),
            )
        )
    await session.flush()
    await repository.bump_grants_version(session, tenant_id, principal_id)


async def create_grant(
    session: AsyncSession,
    cache: PolicyCache,
    access: TenantAccess,
    data: GrantCreate,
    *,
    limit: int,
) -> Grant:
    """A new grant, within the principal's ``limit`` of grants (``HUB_MAX_GRANTS_PER_PRINCIPAL``).

    A principal's policy is read and compiled whole on the event loop when it changes, and, past
    what the policy cache holds, on each request: with no bound, 250,000 grants took 18 s of a
    replica's loop a request, for every tenant's requests alike (stop 44)."""
    resource = _validated(data)
    principal = await repository.get_principal(session, access.tenant_id, data.principal_id)
    if principal is None:
        raise NotFound("principal not found")
    await ensure_may_manage(session, access, principal)
    await ensure_may_confer(
        session, cache, access, [(resource, data.action, data.effect)], data.expires_at
    )
    # the principal's row first: the update holds it to the end of the transaction, so two
    # creates for one principal run one after the other, and the second sees the first (its
    # grant, or its replacing an expired one: they raced to delete it, a review found, stop 53)
    await repository.bump_grants_version(session, access.tenant_id, data.principal_id)
    duplicate = await repository.find_duplicate(
        session, access.tenant_id, data.principal_id, resource, data.action
    )
    replaced = None
    if duplicate is not None:
        if duplicate.expires_at is None or duplicate.expires_at > clock.now():
            raise Conflict("the principal already has a grant for this resource and action")
        # an expired grant decides nothing: it gives way to the new one (it answered 409, and
        # only deleting it first let a grant be made again; a two-replica walk, stop 53)
        replaced = str(duplicate.id)
        await session.delete(duplicate)
        await session.flush()
    held = await repository.count_grants(session, access.tenant_id, data.principal_id)
    if held >= limit:
        raise Conflict(
            f"the principal holds {held} grants, the most one principal may hold"
            " (HUB_MAX_GRANTS_PER_PRINCIPAL); delete some, or cover several with a pattern",
            limit=limit,
        )
    grant = Grant(
        id=uuid.uuid4(),
        tenant_id=access.tenant_id.value,
        principal_id=data.principal_id,
        resource=resource,
        action=data.action,
        effect=data.effect,
        conditions=data.conditions or {},
        expires_at=data.expires_at,
        created_by=access.actor_id,
        created_at=clock.now(),
    )
    session.add(grant)
    await session.flush()
    await record_for(
        session,
        access,
        Action.GRANT_CREATE,
        f"grant:{grant.id}",
        {
            "principal_id": str(data.principal_id),
            "resource": resource,
            "action": data.action,
            "effect": data.effect,
            **({"replaced_expired_grant_id": replaced} if replaced else {}),
        },
    )
    return grant


async def deletable_grant(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess, grant_id: uuid.UUID
) -> Grant:
    """The grant ``access`` may delete (404 when there is none; 403 as :func:`delete_grant`
    would refuse): what the console asks to confirm before it deletes."""
    grant = await repository.get_grant(session, access.tenant_id, grant_id)
    if grant is None:
        raise NotFound("grant not found")
    await ensure_may_manage(session, access, grant.principal_id)
    if grant.effect != "allow" and not access.caller.is_tenant_admin:
        # removing a deny or ask can widen what its principal may do: same rule as conferring;
        # a tenant_admin may always delete any grant, so no grant can lock every admin out
        await ensure_may_confer(session, cache, access, [(grant.resource, grant.action, "allow")])
    return grant


async def delete_grant(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess, grant_id: uuid.UUID
) -> None:
    grant = await deletable_grant(session, cache, access, grant_id)
    await session.delete(grant)
    await session.flush()
    await repository.bump_grants_version(session, access.tenant_id, grant.principal_id)
    await record_for(
        session,
        access,
        Action.GRANT_DELETE,
        f"grant:{grant.id}",
        {"principal_id": str(grant.principal_id), "resource": grant.resource},
    )


async def list_grants(
    session: AsyncSession,
    access: TenantAccess,
    params: PageParams,
    principal_id: uuid.UUID | None,
) -> Page[Grant]:
    return await repository.list_grants(session, access.tenant_id, params, principal_id)


#: :func:`check_grant`'s read of the principal's version, which the route sends with the key
CHECK_READ_AHEAD = repository.VERSION_AHEAD


async def check_grant(
    session: AsyncSession,
    cache: PolicyCache,
    access: TenantAccess,
    data: GrantCheck,
    effective: EffectiveCheck,
) -> GrantDecision:
    resource = canonical_resource(data.resource, data.action)
    caller = access.caller
    version: int | None
    if data.principal_id == caller.principal_id and caller.tenant_id == access.tenant_id:
        version = caller.grants_version  # read with the caller's key in this very request
    else:
        version = await repository.grants_version_of(session, access.tenant_id, data.principal_id)
    if version is None:
        raise NotFound("principal not found")
    policy = cache.get(data.principal_id, version)
    if policy is None:
        policy = await load_policy(session, cache, access.tenant_id, data.principal_id)
    decision = policy.decide(resource, data.action, clock.now())
    if data.deployment_id is None:
        return GrantDecision(effect=decision.effect, grant_id=decision.grant_id)
    if data.action != "call" or not resource.startswith("tool:") or resource.endswith("*"):
        raise BadRequest("deployment_id takes one tool: resource tool:<handle>.<tool>, action call")
    await access.require(f"deployment:{data.deployment_id}", "read")  # a body-named object
    effect, reasons = await effective.effective(
        session, access.tenant_id, data.deployment_id, data.principal_id, resource, decision.effect
    )
    return GrantDecision(
        effect=effect,  # type: ignore[arg-type]
        grant_id=decision.grant_id,
        grant_effect=decision.effect,
        reasons=reasons,
    )
