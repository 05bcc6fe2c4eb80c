"""One audit row per ``tools/call`` (DESIGN §10.2 step 7), and the call metrics.

Written in a fresh short transaction after the call (never one open across the upstream call)
or, given an :class:`~hub.audit.writer.AuditWriter` (the agents' endpoint), queued there and
written after the answer, in a transaction shared with the calls that ended meanwhile: the
endpoint waits for :attr:`HubAudit.pending` in the request's background. The row holds the
decision and its reasons, the approval id, the arguments' sha256 (never their values), the tool's
sha256, the catalog version, the agent's ``grants_version``, outcome and class, upstream
milliseconds.
"""

from __future__ import annotations

from typing import Any

from hub.audit.actions import Action
from hub.audit.service import entry_of, record_failure
from hub.audit.writer import AuditWriter, Pending
from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.core.tenancy import TenantId
from hub.gateway.engine.ports import CallRecord

__all__ = ["HubAudit", "call_details", "call_resource"]


def call_resource(record: CallRecord) -> str:
    """A ``tool.call`` row's resource: the tool's grant key (the deployment's when unknown)."""
    return record.grant_key or f"deployment:{record.deployment_id}"


def call_details(record: CallRecord) -> dict[str, Any]:
    """A ``tool.call`` row's details (the unset ones left out); also the direct-mode sweep's
    (:mod:`hub.gateway.adapters.unreported`), so both rows read alike."""
    details: dict[str, Any] = {
        "deployment_id": str(record.deployment_id),
        "wire_name": record.wire_name,
        "decision": record.decision,
        "reasons": list(record.reasons),
        "approval_id": str(record.approval_id) if record.approval_id else None,
        "arguments_sha256": record.arguments_sha256,
        "tool_sha256": record.tool_sha256,
        "catalog_version": record.catalog_version,
        "grants_version": record.grants_version,
        "class": record.error_class,
        "reason": record.reason,
        "upstream_ms": round(record.upstream_ms, 3) if record.upstream_ms is not None else None,
    }
    return {k: v for k, v in details.items() if v is not None}


class HubAudit:
    def __init__(
        self,
        db: Database,
        metrics: Metrics,
        tenant_id: TenantId,
        request_id: str,
        writer: AuditWriter | None = None,
    ) -> None:
        self._db = db
        self._metrics = metrics
        self._tenant = tenant_id
        self._request_id = request_id
        self._writer = writer
        self.pending = Pending()

    async def record(self, record: CallRecord) -> None:
        event: dict[str, Any] = {
            "tenant_id": self._tenant,
            "actor_id": record.agent_id,
            "action": Action.TOOL_CALL,
            "resource": call_resource(record),
            "request_id": self._request_id,
            "outcome": record.outcome,
            "details": call_details(record),
        }
        if self._writer is not None:
            self._writer.submit(self._db, entry_of(**event), self.pending)
        else:
            await record_failure(self._db, **event)  # a fresh short transaction; never raises
        self._metrics.tool_calls.labels(
            outcome=record.outcome, error_class=record.error_class or "none"
        ).inc()
