"""The sidecar bundle's per-tool effects, as the gateway takes them (DESIGN §10.1, §15), plugged
into :mod:`hub.deployments` as its :class:`~hub.deployments.bundle.BundleDecisions` component.

The deployment's view is the one the endpoint serves (:class:`ViewLoader`), built from the view
rows the bundle endpoint read (the bundle is built from the same rows), the policy is the
deployment's agent's as of now (whoever reads the bundle; when the agent itself reads it, at the
``grants_version`` its key's read brought, from the policy cache without reading its grants),
and the decision is the engine's :func:`~hub.gateway.engine.decision.effective` — so a sidecar
lists exactly what the endpoint lists. The view and the decisions are computed only when the
endpoint asks (:class:`~hub.deployments.bundle.Deciding`): a kept bundle whose agent's grants
ignore the clock needs neither.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.tenancy import TenantId
from hub.deployments.bundle import BundleDecisions, Deciding, ToolDecisions
from hub.deployments.service import ViewRow
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.engine.decision import DriftPolicy, effective
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache

__all__ = ["bundle_decisions"]


def bundle_decisions(
    views: ViewLoader, cache: PolicyCache, drift_policy: DriftPolicy
) -> BundleDecisions:
    async def decide(
        session: AsyncSession,
        tenant_id: TenantId,
        deployment_id: uuid.UUID,
        agent_id: uuid.UUID,
        known_version: int | None,
        rows: Sequence[ViewRow],
    ) -> Deciding:
        if known_version is None:  # someone else reads it: the agent's policy as of now
            version, policy = await grants_service.current_policy(
                session, cache, tenant_id, agent_id
            )
        else:  # the agent's own sidecar (every sync): its key's read brought the version
            version = known_version
            policy = await grants_service.policy_of(session, cache, tenant_id, agent_id, version)
        now = clock.now()

        async def decisions() -> ToolDecisions:
            view = await views.from_rows(session, tenant_id, deployment_id, rows)
            tools = {}
            for tool in view.tools.values() if view is not None else ():
                grant = policy.decide(tool.grant_key, "call", now).effect
                decision = effective(grant, tool, drift_policy=drift_policy)
                tools[(tool.handle, tool.name)] = (decision.effect, tool.drifted)
            return ToolDecisions(version, tools)

        return Deciding(version, policy.static, decisions)

    return BundleDecisions(decide)
