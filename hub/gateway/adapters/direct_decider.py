"""The upstream port of a direct-mode decision (:mod:`hub.gateway.decisions`): where the hub's
own call would go out, it checks that the call could run and stops the engine; the sidecar runs
the call itself."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.db import Database
from hub.core.errors import NotFound
from hub.core.tenancy import TenantId
from hub.credentials.vault import load_usable_credential
from hub.deployments import service as deployments_service
from hub.gateway.engine.model import DeploymentView, ServerEntry, ToolEntry
from hub.gateway.engine.ports import Shaper, UpstreamFailure, UpstreamResult
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache

__all__ = ["DirectDecider", "Proceed"]


class Proceed(BaseException):
    """The engine reached the upstream call: the sidecar runs it. Not an ``Exception``: the
    engine marks a call that raised one as failed (the hub could not serve it)."""


class DirectDecider:
    """The upstream port of a decision: it stops the engine where the call would go out, once
    the server's credential is still usable and the deployment's sidecar may still use it. The
    sidecar holds a lease of it for up to ``LEASE_S``; a credential revoked, deleted, expired or
    in error meanwhile was still allowed call after call until the lease ran out (a two-replica
    walk, stop 53), where the hub's own call fails ``credential_unavailable`` at once: the
    decision now fails the same way. So it does when the lease could not be had now: the
    deployment names no sidecar, or a disabled one, or one no longer allowed
    ``credential:<c> use`` (stop 54)."""

    proceeded = False
    credential_version: int | None = None  # the usable credential's, as read

    def __init__(self, db: Database, tenant_id: TenantId, policies: PolicyCache) -> None:
        self._db = db
        self._tenant_id = tenant_id
        self._policies = policies

    async def call(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Any,
        shape: Shaper,
    ) -> UpstreamResult:
        if server.credential_id is not None:
            try:
                async with self._db.reads() as session:
                    credential = await load_usable_credential(
                        session, self._tenant_id, server.credential_id
                    )
                    if not await self._sidecar_may_use(session, view, server.credential_id):
                        raise NotFound("the deployment's sidecar may not use the credential")
            except NotFound:
                raise UpstreamFailure("credential_unavailable") from None
            self.credential_version = credential.version
        self.proceeded = True
        raise Proceed

    async def _sidecar_may_use(
        self, session: AsyncSession, view: DeploymentView, credential_id: uuid.UUID
    ) -> bool:
        """Whether the deployment's sidecar could lease the credential now (the lease's own
        rule, :mod:`hub.gateway.lease`): named, not disabled, and allowed ``use`` on it."""
        tenant_id = self._tenant_id
        sidecar = await deployments_service.sidecar_of(session, tenant_id, view.deployment_id)
        if sidecar is None:
            return False
        principal_id, version = sidecar
        policy = await grants_service.policy_of(
            session, self._policies, tenant_id, principal_id, version
        )
        decision = policy.decide(f"credential:{credential_id}", "use", clock.now())
        return decision.effect == "allow"
