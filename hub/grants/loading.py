"""A principal's grants, read and compiled, and cached by ``grants_version`` (DESIGN §8)."""

from __future__ import annotations

import json
import logging
import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.db import preliminary_reads
from hub.core.tenancy import TenantId
from hub.grants import repository
from hub.grants.cache import PolicyCache
from hub.grants.conditions import parse_conditions
from hub.grants.policy import CompiledPolicy, GrantRule

__all__ = ["current_policy", "load_policy", "policy_of", "to_rule"]

log = logging.getLogger("hub.grants")


def to_rule(row: repository.RuleRow) -> GrantRule:
    """The engine's rule for a grant's row (:func:`repository.rule_rows_of`)."""
    grant_id, resource, action, effect, expires_at, conditions = row
    try:
        if isinstance(conditions, str):  # the JSON text: ``{}`` for nearly every grant
            conditions = None if conditions == "{}" else json.loads(conditions)
        window = parse_conditions(conditions) if conditions else None
    except ValueError:  # (PolicyError, bad JSON) validated on write; fail closed if not
        log.error("grant %s has invalid stored conditions; it now denies", grant_id)
        return GrantRule(grant_id, resource, action, "deny", expires_at, None)
    return GrantRule(grant_id, resource, action, effect, expires_at, window)  # type: ignore[arg-type]


async def load_policy(
    session: AsyncSession, cache: PolicyCache, tenant_id: TenantId, principal_id: uuid.UUID
) -> CompiledPolicy:
    """Compile the principal's grants and cache them under the version read with them."""
    return (await _compiled(session, cache, tenant_id, principal_id))[1]


async def _compiled(
    session: AsyncSession, cache: PolicyCache, tenant_id: TenantId, principal_id: uuid.UUID
) -> tuple[int, CompiledPolicy]:
    """The principal's grants as read now, compiled and cached under the version read with
    them (``-1``, and nothing cached, when the principal is not in the tenant)."""
    version, rows = await repository.rule_rows_of(session, tenant_id, principal_id)
    policy = CompiledPolicy.compile(map(to_rule, rows))
    if version >= 0:
        cache.put(principal_id, version, policy)
    return version, policy


async def current_policy(
    session: AsyncSession, cache: PolicyCache, tenant_id: TenantId, principal_id: uuid.UUID
) -> tuple[int, CompiledPolicy]:
    """The principal's ``grants_version`` and compiled policy as of now, read in one session
    (for a reader that is not the principal itself, e.g. the sidecar bundle read by an admin)."""
    known = await repository.grants_version_of(session, tenant_id, principal_id)
    cached = None if known is None else cache.get(principal_id, known)
    if known is not None and cached is not None:
        return known, cached  # the grants themselves are read only when the cache lacks them
    return await _compiled(session, cache, tenant_id, principal_id)


async def policy_of(
    session: AsyncSession,
    cache: PolicyCache,
    tenant_id: TenantId,
    principal_id: uuid.UUID,
    version: int,
) -> CompiledPolicy:
    """The principal's compiled policy at ``version`` (the ``grants_version`` authentication
    read), from the cache when it holds that version, else read on ``session``."""
    policy = cache.get(principal_id, version)
    if policy is None:
        async with preliminary_reads(session):
            policy = await load_policy(session, cache, tenant_id, principal_id)
    return policy
