"""The gateway engine: one ``tools/call`` from wire name to audited result (DESIGN §10.2).

1. Resolve the wire name (unknown → JSON-RPC ``-32602``, ``unknown_tool``), then decide
   (:func:`~hub.gateway.engine.decision.effective`): ``deny`` → JSON-RPC ``40300``
   (``forbidden``) before anything else runs.
2. Validate the arguments (:mod:`~hub.gateway.engine.validation`); failure → ``isError``
   ``invalid_arguments`` with each error's path. Only valid arguments ever create an approval.
3. ``ask`` → the approval port (§10.3): approved (and consumed) → run; pending → ``isError``
   ``approval_pending``; denied → JSON-RPC ``40300`` ``approval_denied``.
4-6. The upstream port sends the call with the mediated credential and runs the engine's
   shaping — redaction first, then the hub's ``_meta`` namespace, then the size bound — while the
   secret is in hand. Failures become ``isError`` ``upstream_failed`` with the hub's text; an
   upstream JSON-RPC error becomes ``isError`` with its code and (redacted, ≤ 1,000 characters)
   message; ``-32020`` (the tool changed upstream) becomes ``tool_changed``.
7. One audit row per call, whatever happened (never argument values: their sha256).

One server failing fails only its own tools: nothing here is shared between servers.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from hub.core.canonical import canonical_json
from hub.gateway.engine.decision import DriftPolicy, effective
from hub.gateway.engine.errors import (
    FORBIDDEN,
    RATE_LIMITED,
    UNKNOWN_TOOL,
    RpcFailure,
    error_result,
)
from hub.gateway.engine.model import DeploymentView, ToolEntry
from hub.gateway.engine.ports import (
    CLASSIC_ASK,
    ApprovalOutcome,
    ApprovalPort,
    AskMode,
    AuditPort,
    CallRecord,
    DecidePort,
    UpstreamFailure,
    UpstreamPort,
)
from hub.gateway.engine.shaping import (
    APPROVAL_META,
    ResultTooLarge,
    fit,
    for_legacy_result,
    heavy,
    listed_tool,
    strip_hub_meta,
    upstream_failure,
)
from hub.gateway.engine.validation import ValidatorCache
from hub.gateway.engine.validation_cost import check_off_loop
from hub.mcp.redaction import Redactor

__all__ = ["CallOutcome", "Gateway", "GatewayOptions", "arguments_sha256", "shaped_result"]

HEADER_MISMATCH = -32020


def arguments_sha256(arguments: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the arguments: what approvals and audit rows bind to."""
    return hashlib.sha256(canonical_json(dict(arguments))).hexdigest()


@dataclass(frozen=True)
class GatewayOptions:
    max_result_bytes: int = 1024 * 1024
    drift_policy: DriftPolicy = "ask"


@dataclass(frozen=True)
class CallOutcome:
    """A ``CallToolResult`` to answer with (``result``), or a JSON-RPC error (``failure``);
    ``pending``: the approval an ``approval_pending`` result stands for (a host may answer it in
    another form, DESIGN §10.3's 2026 ``input_required``)."""

    result: dict[str, Any] | None = None
    failure: RpcFailure | None = None
    pending: ApprovalOutcome | None = None


class Gateway:
    """The engine: stateless apart from the compiled-validator cache; one per host."""

    def __init__(self, options: GatewayOptions | None = None) -> None:
        self.options = options or GatewayOptions()
        self.validators = ValidatorCache()

    # --- tools/list ------------------------------------------------------------------------

    def list_tools(
        self, view: DeploymentView, decide: DecidePort, *, legacy: bool
    ) -> list[dict[str, Any]]:
        """The ``allow`` and ``ask`` tools, sorted by wire name; ``deny`` tools are not listed."""
        listed = []
        for wire_name in sorted(view.tools):
            tool = view.tools[wire_name]
            decision = self.decide(tool, decide)
            if decision == "deny":
                continue
            listed.append(listed_tool(tool.tool, wire_name, ask=decision == "ask", legacy=legacy))
        return listed

    def decide(self, tool: ToolEntry, decide: DecidePort) -> Literal["allow", "ask", "deny"]:
        grant = decide.grant_effect(tool.grant_key)
        return effective(grant, tool, drift_policy=self.options.drift_policy).effect

    # --- tools/call ------------------------------------------------------------------------

    async def call(
        self,
        view: DeploymentView,
        wire_name: str,
        arguments: Any,
        *,
        decide: DecidePort,
        approvals: ApprovalPort,
        upstream: UpstreamPort,
        audit: AuditPort,
        legacy: bool,
        ask: AskMode = CLASSIC_ASK,
        max_result_bytes: int | None = None,
    ) -> CallOutcome:
        """``max_result_bytes``: this call's bound on its result, when not the engine's own
        (the sidecar's engine bounds a direct-mode call as its hub says)."""
        record = CallRecord(view.deployment_id, view.agent_id, wire_name)
        record.grants_version = decide.grants_version
        max_bytes = max_result_bytes or self.options.max_result_bytes
        try:
            outcome = await self._call(
                view, wire_name, arguments, decide, approvals, upstream, record, ask, max_bytes,
                legacy,
            )  # fmt: skip
        except asyncio.CancelledError:
            # the agent went away, or cancelled the call: audited as what it is, never as the
            # success a record starts as (its upstream leg, if it began, was cancelled too)
            if record.reason != "cancelled":
                record.outcome, record.reason = "failed", "cancelled"
            raise
        except Exception:
            # the hub's own failure (its database away: the endpoint answers 50300): audited as
            # a failure, never as the success a record starts as (a walk found calls answered
            # 503, an ``ask`` one with no approval, audited and counted as successes)
            record.outcome, record.error_class = "failed", "unavailable"
            record.reason = record.reason or "hub_error"
            raise
        finally:
            await audit.record(record)
        if outcome.result is not None and legacy:
            return CallOutcome(result=for_legacy_result(outcome.result))
        return outcome

    async def _call(
        self,
        view: DeploymentView,
        wire_name: str,
        arguments: Any,
        decide: DecidePort,
        approvals: ApprovalPort,
        upstream: UpstreamPort,
        record: CallRecord,
        ask: AskMode,
        max_bytes: int,
        legacy: bool,
    ) -> CallOutcome:
        tool = view.tools.get(wire_name)
        if tool is None:
            record.outcome, record.error_class = "failed", "unknown_tool"
            return CallOutcome(
                failure=RpcFailure(UNKNOWN_TOOL, f"Unknown tool: {wire_name[:64]}", "unknown_tool")
            )
        record.grant_key, record.tool_sha256 = tool.grant_key, tool.sha256
        record.catalog_version = tool.catalog_version
        decision = effective(
            decide.grant_effect(tool.grant_key), tool, drift_policy=self.options.drift_policy
        )
        record.decision, record.reasons = decision.effect, decision.reasons
        if decision.effect == "deny":
            record.outcome, record.error_class = "denied", "forbidden"
            return CallOutcome(failure=RpcFailure(FORBIDDEN, "not permitted", "forbidden"))
        if arguments is None:
            arguments = {}
        validator = self.validators.get(
            tool.sha256, tool.tool.get("inputSchema"), strict=tool.arguments == "strict"
        )
        errors = await validator.check(arguments)
        if errors:
            record.outcome, record.error_class = "failed", "invalid_arguments"
            lines = "\n".join(f"- {e.path}: {e.message}" for e in errors)
            text = f"invalid_arguments: the arguments do not match the tool's schema:\n{lines}"
            details = [{"path": e.path, "message": e.message} for e in errors]
            return CallOutcome(result=error_result("invalid_arguments", text, errors=details))
        digest = arguments_sha256(arguments)
        record.arguments_sha256 = digest
        if decision.effect == "ask":
            # ``ask`` goes positionally: a port that answers every call alike takes ``*_``
            approval = await approvals.resolve(view, tool, arguments, digest, ask)
            record.approval_id = approval.approval_id
            if approval.status == "denied":
                record.outcome, record.error_class = "denied", "approval_denied"
                data = {"approval_id": str(approval.approval_id)}
                return CallOutcome(
                    failure=RpcFailure(
                        FORBIDDEN, "the approval was denied", "approval_denied", data
                    )
                )
            if approval.status == "withdrawn":
                record.outcome, record.error_class = "denied", "forbidden"
                record.reason = "changed_while_waiting"
                message = "not permitted: what allowed this call changed while it waited"
                return CallOutcome(failure=RpcFailure(FORBIDDEN, message, "forbidden"))
            if approval.status == "pending":
                record.outcome, record.error_class = "pending", "approval_pending"
                return CallOutcome(result=_pending_result(approval), pending=approval)
            if approval.status == "crowded":
                record.outcome, record.error_class = "failed", "rate_limited"
                retry = approval.retry_after_s or 1
                message = (
                    "Too many of this agent's calls are waiting for a person's approval:"
                    f" try again in {retry} s"
                )
                return CallOutcome(
                    failure=RpcFailure(
                        RATE_LIMITED, message, "rate_limited", {"retry_after_s": retry}
                    )
                )
        result = await self._run(view, tool, arguments, upstream, record, max_bytes, legacy)
        return CallOutcome(result=result)

    async def _run(
        self,
        view: DeploymentView,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        upstream: UpstreamPort,
        record: CallRecord,
        max_bytes: int,
        legacy: bool,
    ) -> dict[str, Any]:
        has_schema = tool.output_schema is not None

        shape = partial(shaped_result, max_bytes=max_bytes, has_schema=has_schema, legacy=legacy)
        try:
            done = await upstream.call(view, view.server_of(tool), tool, arguments, shape)
        except asyncio.CancelledError:
            record.outcome, record.error_class, record.reason = (
                "failed",
                "upstream_failed",
                "cancelled",
            )
            raise
        except ResultTooLarge:
            record.outcome, record.error_class, record.reason = (
                "failed",
                "upstream_failed",
                "result_too_large",
            )
            return upstream_failure("result_too_large")
        except UpstreamFailure as failure:
            record.upstream_ms = failure.upstream_ms
            return _failed(failure, record)
        record.upstream_ms = done.upstream_ms
        record.outcome = "success"
        return done.result


def _shaped(
    raw: dict[str, Any], secrets: list[str], max_bytes: int, has_schema: bool, legacy: bool
) -> dict[str, Any]:
    redacted = strip_hub_meta(Redactor(secrets).result(raw))
    if legacy:  # before the cap: a legacy agent's text of a non-object structuredContent
        redacted = for_legacy_result(redacted)
    return fit(redacted, max_bytes, has_output_schema=has_schema)


async def shaped_result(
    raw: dict[str, Any], secrets: list[str], *, max_bytes: int, has_schema: bool, legacy: bool
) -> dict[str, Any]:
    """A raw result as its agent gets it: redacted, the hub's ``_meta`` namespace, the cap; a
    :func:`heavy` one on the checking thread, so the loop serves every tenant meanwhile."""
    if heavy(raw):
        shape = partial(
            _shaped, secrets=secrets, max_bytes=max_bytes, has_schema=has_schema, legacy=legacy
        )
        return await check_off_loop(shape, raw)
    return _shaped(raw, secrets, max_bytes, has_schema, legacy)


def _failed(failure: UpstreamFailure, record: CallRecord) -> dict[str, Any]:
    record.outcome = "failed"
    if failure.reason == "tool_error" and failure.code == HEADER_MISMATCH:
        record.error_class = "tool_changed"
        text = "tool_changed: the tool's definition changed upstream since it was approved for use"
        return error_result("tool_changed", text)
    if failure.reason == "tool_error":
        record.error_class, record.reason = "upstream_failed", "tool_error"
        message = failure.message or "(no message)"
        text = f"upstream_failed (tool_error {failure.code}): {message}"
        return error_result("upstream_failed", text, reason="tool_error", code=failure.code)
    record.error_class, record.reason = "upstream_failed", failure.reason
    return upstream_failure(failure.reason)


def _pending_result(approval: ApprovalOutcome) -> dict[str, Any]:
    expires = approval.expires_at.isoformat() if approval.expires_at else None
    text = (
        f"approval_pending: this call needs a person's approval before it runs. Approval "
        f"{approval.approval_id} is pending"
        + (f" at {approval.url}" if approval.url else "")
        + ". Once it is approved, repeat exactly the same call with the same arguments"
        + (f"; it expires at {expires}." if expires else ".")
    )
    meta = {
        APPROVAL_META: {
            "id": str(approval.approval_id),
            "status": "pending",
            "url": approval.url,
            "expires_at": expires,
        }
    }
    return error_result("approval_pending", text, extra_meta=meta)
