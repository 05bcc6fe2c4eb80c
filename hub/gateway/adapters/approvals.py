"""The approval port over the approvals service (DESIGN §10.3): (a), then (b), then wait.

How long the wait lasts is the caller's :class:`~hub.gateway.engine.ports.AskMode`: up to
``HUB_APPROVAL_WAIT_S``, not at all, or only for a 2026 retry whose ``requestState`` selected
this very call (DESIGN §15: the state selects, the binding decides)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.approvals import service as approvals
from hub.approvals.service import ApprovalContext, ApprovalRequest, Binding, TooManyPending
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.gateway.adapters.recheck import Recheck, bound_sha256
from hub.gateway.engine.model import DeploymentView, ToolEntry
from hub.gateway.engine.ports import CLASSIC_ASK, ApprovalOutcome, AskMode

__all__ = ["HubApprovals"]


class HubApprovals:
    def __init__(
        self,
        db: Database,
        ctx: ApprovalContext,
        tenant_id: TenantId,
        url_of: Any,
        recheck: Recheck | None = None,
    ) -> None:
        self._db = db
        self._ctx = ctx
        self._tenant = tenant_id
        self._url_of = url_of  # approval id -> where a person decides it
        self._recheck = recheck  # what allowed the call, read again after a wait

    async def resolve(
        self,
        view: DeploymentView,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        arguments_sha256: str,
        ask: AskMode = CLASSIC_ASK,
    ) -> ApprovalOutcome:
        binding = Binding(
            deployment_id=view.deployment_id,
            agent_id=view.agent_id,
            grant_key=tool.grant_key,
            arguments_sha256=arguments_sha256,
            tool_sha256=bound_sha256(tool),
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
        wait_s = self._ctx.wait_s if _waits(ask, pending.id) else 0.0
        row = await self._ctx.watch.wait(self._db, self._tenant, pending, wait_s)
        if row is None:  # gone during the wait with its deployment: no id worth handing out
            return ApprovalOutcome("withdrawn", pending.id)
        if row.status == "approved":
            # approved during the wait: what the request read when it came may be stale now
            # (a key revoked, a grant turned deny, the entry removed); the approval stays
            # unused when it is
            if self._recheck is not None and not await self._recheck(tool):
                return ApprovalOutcome("withdrawn", row.id)
            used = await approvals.use_approved(self._db, self._tenant, binding)
            if used is not None:
                return ApprovalOutcome("approved", used)
            # another identical call consumed it first: this one asks again (rule (b))
            try:
                pending = await approvals.pending_for(self._db, self._ctx, self._tenant, request)
            except TooManyPending as crowded:
                return ApprovalOutcome("crowded", None, retry_after_s=crowded.retry_after_s)
            return self._pending(pending.id, pending.expires_at, binding)
        if row.status == "denied":
            return ApprovalOutcome("denied", row.id, row.expires_at)
        return self._pending(row.id, row.expires_at, binding)

    def _pending(
        self, approval_id: uuid.UUID, expires_at: datetime, binding: Binding
    ) -> ApprovalOutcome:
        url = self._url_of(approval_id)
        return ApprovalOutcome(
            "pending",
            approval_id,
            expires_at,
            url,
            arguments_sha256=binding.arguments_sha256,
            tool_sha256=binding.tool_sha256,
        )


def _waits(ask: AskMode, pending_id: uuid.UUID) -> bool:
    """Whether this call waits for a decision on ``pending_id`` (see :class:`AskMode`): for a
    ``selected`` mode, only when the state selected that very approval. ``pending_id`` was found
    or made by this call's binding, so it is the selected one only if the selection's call is
    this one on every binding field (its hashes are sealed with it for that reason)."""
    if ask.wait == "always":
        return True
    selected = ask.selected
    return ask.wait == "selected" and selected is not None and selected.approval_id == pending_id
