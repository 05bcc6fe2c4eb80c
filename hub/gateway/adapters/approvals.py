"""The approval port over the approvals service (DESIGN §10.3): (a), then (b), then wait."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hub.approvals import service as approvals
from hub.approvals.service import ApprovalContext, ApprovalRequest, Binding, TooManyPending
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.gateway.engine.model import DeploymentView, ToolEntry
from hub.gateway.engine.ports import ApprovalOutcome

__all__ = ["HubApprovals"]


def _bound_sha256(tool: ToolEntry) -> str:
    """The hash an approval binds: the live definition's for a drifted tool (DESIGN §15), so a
    person approves what the server serves now, and a further change asks again."""
    if tool.drifted and tool.drift and isinstance(tool.drift.get("to_sha256"), str):
        return str(tool.drift["to_sha256"])
    return tool.sha256


class HubApprovals:
    def __init__(
        self, db: Database, ctx: ApprovalContext, tenant_id: TenantId, url_of: Any
    ) -> None:
        self._db = db
        self._ctx = ctx
        self._tenant = tenant_id
        self._url_of = url_of  # approval id -> where a person decides it

    async def resolve(
        self,
        view: DeploymentView,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        arguments_sha256: str,
    ) -> ApprovalOutcome:
        binding = Binding(
            deployment_id=view.deployment_id,
            agent_id=view.agent_id,
            grant_key=tool.grant_key,
            arguments_sha256=arguments_sha256,
            tool_sha256=_bound_sha256(tool),
        )
        used = await approvals.use_approved(self._db, self._tenant, binding)
        if used is not None:
            return ApprovalOutcome("approved", used)
        denied = await approvals.denied_for(self._db, self._tenant, binding)
        if denied is not None:
            return ApprovalOutcome("denied", denied.id, denied.expires_at)
        request = ApprovalRequest(
            binding=binding,
            handle=tool.handle,
            tool_name=tool.name,
            wire_name=tool.wire_name,
            arguments=dict(arguments),
            catalog_version=tool.catalog_version,
            drift=dict(tool.drift) if tool.drift else None,
        )
        try:
            pending = await approvals.pending_for(self._db, self._ctx, self._tenant, request)
        except TooManyPending as crowded:
            return ApprovalOutcome("crowded", None, retry_after_s=crowded.retry_after_s)
        row = await self._ctx.watch.wait(self._db, self._tenant, pending, self._ctx.wait_s)
        if row is not None and row.status == "approved":
            used = await approvals.use_approved(self._db, self._tenant, binding)
            if used is not None:
                return ApprovalOutcome("approved", used)
            # another identical call consumed it first: this one asks again (rule (b))
            try:
                pending = await approvals.pending_for(self._db, self._ctx, self._tenant, request)
            except TooManyPending as crowded:
                return ApprovalOutcome("crowded", None, retry_after_s=crowded.retry_after_s)
            return ApprovalOutcome(
                "pending", pending.id, pending.expires_at, self._url_of(pending.id)
            )
        if row is not None and row.status == "denied":
            return ApprovalOutcome("denied", row.id, row.expires_at)
        current = row or pending
        return ApprovalOutcome("pending", current.id, current.expires_at, self._url_of(current.id))
