"""Direct mode's decisions (DESIGN §10.5, §15): the hub decides, the sidecar runs the call.

``POST /tenants/{t}/deployments/{d}/decisions {"wire_name", "arguments"}`` — by the deployment's
agent (its key, as on the endpoint: anyone else 403) — runs the engine's own call path up to the
upstream call: wire name, decision, argument validation, the approval (§10.3). The answer is
``{"decision_id", "effect", "tool_sha256", "result"?, "error"?}`` (with a ``decision_id``, also the
hub's ``call_timeout_s`` and ``max_result_bytes``, which bound the call the sidecar runs as they
bound the hub's own): a call that must not run
carries the engine's ``result`` (``invalid_arguments``, ``approval_pending``; with
``url_elicitation``, a pending call's ``input_required`` result as the endpoint gives a 2026-07-28
client that declares URL-mode elicitation, its state sealed the same way) or JSON-RPC
``error`` (``unknown_tool``, ``forbidden``, ``approval_denied``) and is audited now, as the
endpoint audits it; a call that may run carries a ``decision_id`` and no audit row yet (the hub
records the decision as it hands it out: one insert). A
decision is one of the agent's tool calls: it is counted in the rate-limit class ``tool_call``
first, with the endpoint's calls, and refused as they are (``error`` ``42900``, class
``rate_limited``, ``retry_after_s``; no decision, no audit row).

``POST …/decisions/{id}/relist`` — by the same agent, after the server answered ``-32020`` —
re-lists the call's server now, as the hub does for its own calls, and answers ``{"changed"}``.

``POST …/decisions/{id}/outcome {"outcome", "class"?, "reason"?, "upstream_ms"?}`` — by the same
agent — writes that call's ``tool.call`` audit row. A decision id is sealed under the keyring
(AES-GCM, AAD ``mcphub/decision/v1`` ‖ tenant ‖ deployment ‖ agent) over the call's audit fields
and an expiry (``DECISION_S``), so an id is good only for its own deployment, agent and call;
the hub keeps the hash of each id it handed out, until it expires, and the report claims it
once, so a second report of the same call is 409 (:mod:`hub.gateway.adapters.outcomes`). A
decision still unreported a minute after it expired gets its ``tool.call`` row anyway, outcome
``unreported`` (:mod:`hub.gateway.adapters.unreported`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import Path, Request
from pydantic import BaseModel, Field, StrictFloat, model_validator

from hub.approvals.links import console_path
from hub.approvals.service import ApprovalContext
from hub.auth.caller import TenantAccess
from hub.auth.deps import parsed_key, pepper_of
from hub.authz.deps import TenantAccessDep
from hub.authz.throttle import rest_router
from hub.core import clock
from hub.core.components import components_of
from hub.core.crypto import Keyring
from hub.core.deps import SessionDep, get_database, reads_only
from hub.core.errors import BadRequest, Conflict, Forbidden, NotFound
from hub.core.metrics import Metrics
from hub.core.paths import parse_id
from hub.core.schemas import Envelope, RequestModel, body_problem
from hub.core.settings import Settings
from hub.drift import DriftWatch
from hub.gateway.adapters.approvals import HubApprovals
from hub.gateway.adapters.audit import HubAudit
from hub.gateway.adapters.decide import PolicyDecider
from hub.gateway.adapters.decision_ids import DECISION_S, open_decision, seal_decision
from hub.gateway.adapters.direct_decider import DirectDecider, Proceed
from hub.gateway.adapters.outcomes import claim_outcome, open_outcome
from hub.gateway.adapters.recheck import approval_recheck
from hub.gateway.adapters.request_state import RequestStates
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.elicitation import ask_mode, elicited
from hub.gateway.engine.engine import Gateway
from hub.gateway.engine.model import DeploymentView
from hub.gateway.engine.ports import CallRecord
from hub.gateway.host import tool_call_refusal
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.mcp.elicitation import round_of
from hub.mcp.server.dispatcher import arguments_problem
from hub.mcp.server.messages import PARSE_ERROR
from hub.ratelimit import RateLimiter

__all__ = ["router"]


router = rest_router(prefix="/tenants/{t}/deployments", tags=["sidecar"])


class UrlElicitation(RequestModel):
    """The call comes from a client that can send its person to a page, with the round's echo."""

    request_state: str | None = Field(default=None, max_length=4096)
    input_responses: dict[str, Any] | None = None


class DecisionCreate(RequestModel):
    wire_name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] | None = None
    url_elicitation: UrlElicitation | None = Field(
        default=None,
        description=(
            "present when the agent's client declares URL-mode elicitation: a call left "
            "pending is answered with an input_required result (DESIGN §10.3)"
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_bad_text(cls, data: Any) -> Any:
        """Every body's rules (:class:`RequestModel`), but not for the arguments: they take what
        the agents' endpoint takes (U+0000, nesting to ``MAX_ARGUMENTS_DEPTH``), since the hub
        keeps them only hashed or encrypted; :func:`decide` refuses what it would refuse."""
        rest = (
            {k: v for k, v in data.items() if k != "arguments"} if isinstance(data, dict) else data
        )
        problem = body_problem(rest)
        if problem is not None:
            raise ValueError(problem)
        return data


class DecisionRead(BaseModel):
    decision_id: str | None
    effect: Literal["allow", "ask", "deny"] | None
    tool_sha256: str | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    # with a decision_id, the hub's bounds for the call the sidecar runs: its deadline
    # (HUB_TOOL_CALL_TIMEOUT_S) and its result's size (HUB_MAX_TOOL_RESULT_BYTES)
    call_timeout_s: float | None = None
    max_result_bytes: int | None = None
    # with a decision_id, the server's credential's version as read now: a sidecar holding a
    # lease of an older version (rotated since) leases it again before the call
    credential_version: int | None = None


class OutcomeCreate(RequestModel):
    outcome: Literal["success", "failed"]
    error_class: str | None = Field(default=None, alias="class", max_length=64)
    reason: str | None = Field(default=None, max_length=64)
    upstream_ms: StrictFloat | None = Field(default=None, ge=0, le=86_400_000)


class OutcomeRead(BaseModel):
    recorded: bool


class RelistRead(BaseModel):
    # the tool changed at its server (now marked drifted); false: it did not, retry once;
    # null: the re-list did not complete
    changed: bool | None


class _Audit:
    """Audit now what will not run; hold the row of a call that will (its outcome writes it)."""

    def __init__(self, audit: HubAudit, upstream: DirectDecider) -> None:
        self._audit = audit
        self._upstream = upstream
        self.held: CallRecord | None = None

    async def record(self, record: CallRecord) -> None:
        if self._upstream.proceeded:
            self.held = record
            return
        await self._audit.record(record)


async def _view_for_agent(
    request: Request, session: SessionDep, access: TenantAccess, d: str
) -> DeploymentView:
    parts = components_of(request.app)
    view = await parts.get(ViewLoader).load(session, access.tenant_id, parse_id(d))
    if view is None:
        raise NotFound("deployment not found")
    if view.agent_id != access.caller.principal_id:
        raise Forbidden("only the deployment's agent may ask for its decisions")
    return view


async def _decision_of(
    request: Request, session: SessionDep, access: TenantAccess, d: str, decision_id: str
) -> tuple[DeploymentView, CallRecord]:
    """The deployment (its agent calling) and a live decision of its own, or 400."""
    view = await _view_for_agent(request, session, access, d)
    record = open_decision(
        components_of(request.app).get(Keyring),
        decision_id,
        access.tenant_id.value,
        view.deployment_id,
        view.agent_id,
    )
    if record is None:
        raise BadRequest("unknown, expired or foreign decision_id", reason="invalid_decision")
    return view, record


@router.post("/{d}/decisions", name="deployment.decide")
@reads_only
async def decide(
    request: Request,
    d: Annotated[str, Path(description="Deployment id")],
    body: DecisionCreate,
    session: SessionDep,
    access: TenantAccessDep,
) -> Envelope[DecisionRead]:
    """The hub's decision on one call of a direct-mode tool (the sidecar then runs it)."""
    view = await _view_for_agent(request, session, access, d)
    problem = arguments_problem(body.arguments)
    if problem is not None:  # the endpoint's answer to a body it cannot parse: not audited
        error = {"code": PARSE_ERROR, "message": problem}
        return Envelope(
            data=DecisionRead(decision_id=None, effect=None, tool_sha256=None, error=error)
        )
    parts = components_of(request.app)
    caller = access.caller
    limiter = parts.get(RateLimiter) if RateLimiter in parts else None
    refused = await tool_call_refusal(limiter, str(caller.principal_id))
    if refused is not None:  # as the endpoint: no decision, no audit row, nothing upstream
        return Envelope(
            data=DecisionRead(
                decision_id=None, effect=None, tool_sha256=None, error=refused.error()
            )
        )
    policy = await grants_service.policy_of(
        session,
        parts.get(PolicyCache),
        access.tenant_id,
        caller.principal_id,
        caller.grants_version,
    )
    public = parts.get(Settings).public_base_url
    tenant_id = access.tenant_id

    def approval_url(approval_id: Any) -> str:
        return f"{public}{console_path(str(tenant_id.value), approval_id)}"

    elicit, states = None, None
    if body.url_elicitation is not None:
        elicit = round_of(body.url_elicitation.request_state, body.url_elicitation.input_responses)
        states = RequestStates(
            parts.get(Keyring), tenant_id.value, view.deployment_id, view.agent_id
        )
    db = get_database(request)
    upstream = DirectDecider(db, tenant_id, parts.get(PolicyCache))
    audit = _Audit(HubAudit(db, parts.get(Metrics), tenant_id, caller.request_id), upstream)
    engine = parts.get(Gateway)
    try:
        outcome = await engine.call(
            view,
            body.wire_name,
            body.arguments,
            decide=PolicyDecider(policy, caller.grants_version, clock.now()),
            approvals=HubApprovals(
                db,
                parts.get(ApprovalContext),
                tenant_id,
                approval_url,
                approval_recheck(
                    db,
                    parts,
                    caller,
                    await parsed_key(request),
                    pepper_of(request),
                    view.deployment_id,
                ),
            ),
            upstream=upstream,
            audit=audit,
            legacy=False,
            ask=ask_mode(elicit, states),
        )
    except Proceed:
        held = audit.held
        assert held is not None  # noqa: S101 - the engine audits in its finally
        # the id seals its own expiry a moment later: the sweep's grace covers the difference
        expires_at = clock.now() + timedelta(seconds=DECISION_S)
        token = seal_decision(parts.get(Keyring), held, tenant_id.value)
        await open_outcome(db, tenant_id, token, expires_at, held, caller.request_id)
        settings = parts.get(Settings)
        return Envelope(
            data=DecisionRead(
                decision_id=token,
                effect=held.decision,
                tool_sha256=held.tool_sha256,
                call_timeout_s=settings.tool_call_timeout_s,
                max_result_bytes=settings.max_tool_result_bytes,
                credential_version=upstream.credential_version,
            )
        )
    tool = view.tools.get(body.wire_name)
    decider = PolicyDecider(policy, caller.grants_version, clock.now())
    effect = engine.decide(tool, decider) if tool is not None else None
    asked = elicited(outcome, elicit, body.wire_name, states)
    return Envelope(
        data=DecisionRead(
            decision_id=None,
            effect=effect,
            tool_sha256=tool.sha256 if tool else None,
            result=asked.result() if asked is not None else outcome.result,
            error=outcome.failure.error() if outcome.failure is not None else None,
        )
    )


@router.post("/{d}/decisions/{decision_id}/outcome", name="deployment.decision_outcome")
@reads_only
async def record_outcome(
    request: Request,
    d: Annotated[str, Path(description="Deployment id")],
    decision_id: Annotated[str, Path(description="The decision's id", max_length=4096)],
    body: OutcomeCreate,
    session: SessionDep,
    access: TenantAccessDep,
) -> Envelope[OutcomeRead]:
    """The audit row of a direct-mode call the sidecar ran."""
    _, record = await _decision_of(request, session, access, d, decision_id)
    parts = components_of(request.app)
    db = get_database(request)
    expires_at = datetime.fromtimestamp(float(record.extra["expires_at"]), tz=UTC)
    if not await claim_outcome(db, access.tenant_id, decision_id, expires_at):
        raise Conflict("this decision's outcome is already recorded", reason="outcome_recorded")
    record.outcome = body.outcome
    record.error_class = body.error_class
    record.reason = body.reason
    record.upstream_ms = body.upstream_ms
    record.extra = {"host": "sidecar"}
    await HubAudit(db, parts.get(Metrics), access.tenant_id, access.caller.request_id).record(
        record
    )
    return Envelope(data=OutcomeRead(recorded=True))


@router.post("/{d}/decisions/{decision_id}/relist", name="deployment.decision_relist")
@reads_only
async def relist_decision(
    request: Request,
    d: Annotated[str, Path(description="Deployment id")],
    decision_id: Annotated[str, Path(description="The decision's id", max_length=4096)],
    session: SessionDep,
    access: TenantAccessDep,
) -> Envelope[RelistRead]:
    """A direct-mode call's server answered ``-32020`` (the tool changed): the hub re-lists that
    server now, as it does for its own calls (DESIGN §15), marking the tool drifted if its live
    definition differs from its pin. The sidecar answers ``tool_changed`` when it did, and
    retries once when it did not."""
    view, record = await _decision_of(request, session, access, d, decision_id)
    parts = components_of(request.app)
    tool = view.tools.get(record.wire_name)
    if tool is None:  # gone from the deployment since: nothing to retry
        return Envelope(data=RelistRead(changed=True))
    watch = parts.get(DriftWatch) if DriftWatch in parts else None
    if watch is None:
        return Envelope(data=RelistRead(changed=None))
    await session.close()  # the probe may take its deadline: no pooled connection held meanwhile
    server_id = view.server_of(tool).server_id
    live = await watch.relist(get_database(request), access.tenant_id, server_id)
    changed = None if live is None else live.get(tool.name) != tool.sha256
    return Envelope(data=RelistRead(changed=changed))
