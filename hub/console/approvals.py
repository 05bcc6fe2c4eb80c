"""The approvals pages: the queue (pending first, refreshed by htmx polling), one approval with
the exact JSON its call would forward, and the decision (DESIGN §10.3, §14, §15).

Opening an approval's page never decides anything; approve and deny are POST forms with the CSRF
token. Deciding goes through :func:`hub.approvals.service.decide_approval`: only people decide,
never the agent that asked, and approving needs the tool's ``call`` (the API's rules, the same
403s). An approval whose arguments can no longer be read shows that and offers no approve.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError
from starlette.responses import Response

from hub.approvals import service
from hub.approvals.deps import ApprovalContextDep
from hub.approvals.links import console_path
from hub.approvals.schemas import ApprovalDecision, ApprovalRead
from hub.approvals.service import ApprovalContext
from hub.catalogs import service as catalogs
from hub.console.names import principal_names
from hub.console.routing import console_router
from hub.console.web import TenantConsole, TenantConsoleDep, form_of, redirect, render
from hub.core.errors import BadRequest, NotFound
from hub.core.pagination import PageParams
from hub.core.paths import parse_id
from hub.deployments import service as deployments

__all__ = ["router"]

router = console_router("/t/{t}/approvals")

QUEUE_LIMIT = 100
RECENT = 50
POLL = "every 3s"


async def _recent(page: TenantConsole, ctx: ApprovalContext) -> list[ApprovalRead]:
    """The newest :data:`RECENT` approvals that are no longer pending."""
    return await service.recent_approvals(page.session, ctx, page.access, RECENT)


async def _queue(page: TenantConsole, ctx: ApprovalContext) -> dict[str, Any]:
    """The pending approvals (what the page polls) and their digest."""
    await page.require("approval:*", "read")
    params = PageParams(limit=QUEUE_LIMIT, cursor=None)
    pending = list(
        (
            await service.list_approvals(
                page.session,
                ctx,
                page.access,
                params,
                status="pending",
                deployment_id=None,
                agent_id=None,
            )
        ).items
    )
    seen = hashlib.sha256("".join(f"{a.id};" for a in pending).encode()).hexdigest()
    return {"pending": pending, "seen": seen}  # the agents' names only when it is rendered


@router.get("", name="console.approvals")
async def approvals(page: TenantConsoleDep, ctx: ApprovalContextDep) -> Response:
    """The queue (polled) and, read once with the page, the recent decisions."""
    data = await _queue(page, ctx)
    others = await _recent(page, ctx)
    deciders = [a.decided_by for a in others if a.decided_by is not None]
    names = await principal_names(
        page, [*(a.agent_id for a in [*data["pending"], *others]), *deciders]
    )
    return render(
        page,
        page.request,
        "approvals/list.html",
        poll=POLL,
        others=others,
        names=names,
        **data,
    )


@router.get("/queue", name="console.approvals_queue")
async def approvals_queue(
    page: TenantConsoleDep,
    ctx: ApprovalContextDep,
    seen: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """The pending queue alone, for htmx to swap in; 204 (htmx swaps nothing) when it is the
    one the page shows already, so a screen reader hears of changes only."""
    data = await _queue(page, ctx)
    if seen == data["seen"]:
        return Response(status_code=204)
    names = await principal_names(page, [a.agent_id for a in data["pending"]])
    return render(page, page.request, "approvals/_queue.html", names=names, **data)


async def _deployment_name(page: TenantConsole, item: ApprovalRead) -> tuple[bool, str | None]:
    """Whether the caller may read the approval's deployment (its page), and then its name."""
    if not await page.may(f"deployment:{item.deployment_id}", "read"):
        return False, None
    row = await deployments.get_deployment_or_none(
        page.session, page.access.tenant_id, item.deployment_id
    )
    return True, row.name if row is not None else None


async def _pinned_tool(
    page: TenantConsole, item: ApprovalRead, may_decide: bool
) -> dict[str, Any] | None:
    """The tool as the call's catalog version holds it (what the upstream says it does, its
    ``destructiveHint`` included), for whoever may read the catalog or decide this approval:
    judging the call needs it, whatever the approver's catalog grants; ``None`` otherwise, or
    when the catalog is gone."""
    if not (may_decide or await page.may(f"catalog:{item.server}", "read")):
        return None
    try:
        catalog = await catalogs.get_catalog(
            page.session, page.access.tenant_id, item.server, item.catalog_version
        )
    except NotFound:
        return None
    return next((t for t in catalog.tools if t.get("name") == item.tool), None)


@router.get("/{a}", name="console.approval")
async def approval(a: str, page: TenantConsoleDep, ctx: ApprovalContextDep) -> Response:
    await page.require_item("approval", a, "read")
    item = await service.get_approval(page.session, ctx, page.access.tenant_id, parse_id(a))
    names = await principal_names(
        page, [item.agent_id, *([item.decided_by] if item.decided_by else [])]
    )
    someone_else = page.caller.kind == "user" and item.agent_id != page.caller.principal_id
    may_decide = someone_else and await page.may(f"approval:{item.id}", "decide")
    # the service decides; this only spares a person a button that would answer 403
    may_approve = may_decide and await page.may(item.grant_key, "call")
    tool = await _pinned_tool(page, item, may_decide)
    may_read_deployment, deployment_name = await _deployment_name(page, item)
    annotations = tool.get("annotations") if tool is not None else None
    return render(
        page,
        page.request,
        "approvals/detail.html",
        item=item,
        names=names,
        deployment_name=deployment_name,
        may_read_deployment=may_read_deployment,
        tool=tool,
        destructive=isinstance(annotations, dict) and annotations.get("destructiveHint") is True,
        may_decide=may_decide,
        someone_else=someone_else,
        may_approve=may_approve,
    )


@router.post("/{a}/decision", name="console.approval_decide")
async def decide(a: str, page: TenantConsoleDep, ctx: ApprovalContextDep) -> Response:
    await page.require_item("approval", a, "decide")
    fields = await form_of(page.request)
    try:
        data = ApprovalDecision(
            decision=fields.get("decision", ""),  # type: ignore[arg-type]
            note=fields.get("note", "").strip() or None,
        )
    except ValidationError:
        raise BadRequest("choose approve or deny; a note is at most 2000 characters") from None
    await service.decide_approval(page.session, ctx, page.access, parse_id(a), data)
    return redirect(console_path(page.t, parse_id(a)))
