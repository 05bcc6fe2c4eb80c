"""The grants page: one principal's grants, add one, delete one, and check a decision
(DESIGN §8, §14), through the grants service with the API's authorisation (``grant`` read and
write; a tenant_admin may always delete, and the page asks before it deletes). The check is a GET
form: it reads only."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError
from starlette.responses import Response

from hub.console.names import principal_names
from hub.console.routing import console_router
from hub.console.web import TenantConsole, TenantConsoleDep, form_of, redirect, render
from hub.core.deps import get_settings_dep
from hub.core.errors import BadRequest
from hub.core.pagination import PageParams
from hub.core.paths import parse_id
from hub.deployments import service as deployments
from hub.grants import service
from hub.grants.deps import EffectiveCheckDep, PolicyCacheDep
from hub.grants.schemas import GrantCheck, GrantCreate, GrantDecision, GrantRead
from hub.principals import service as principals
from hub.principals.schemas import PrincipalRead

__all__ = ["router"]

router = console_router("/t/{t}/grants")

ACTIONS = ("read", "write", "use", "decide", "call", "*")
EFFECTS = ("allow", "ask", "deny")
LIMIT = 200


def _principal_id(raw: str | None) -> uuid.UUID | None:
    if not raw:
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise BadRequest("choose a principal") from None


async def _principals(page: TenantConsole) -> list[PrincipalRead] | None:
    if not await page.may("principal:*", "read"):
        return None
    result = await principals.list_principals(page.session, page.access, PageParams(LIMIT, None))
    return [PrincipalRead.model_validate(p) for p in result.items]


async def _deployments(page: TenantConsole) -> list[tuple[uuid.UUID, str]] | None:
    """The deployments the check may name, ``(id, label)``, when the caller may list them."""
    if not await page.may("deployment:*", "read"):
        return None
    result = await deployments.list_deployments(page.session, page.access, PageParams(LIMIT, None))
    return [(d.id, d.name or str(d.id)) for d in result.items]


async def _context(page: TenantConsole) -> dict[str, Any]:
    """What every rendering of the page needs besides its grants: the principals (by name),
    the deployments, the choices."""
    people = await _principals(page)
    caller = page.access.caller
    manages_admins = caller.is_platform_admin or caller.is_tenant_admin
    return {
        "principals": people,
        "principal_names": {p.id: p.name for p in people or ()},
        # role protection: their grants' Delete would answer 403, so none is offered
        "protected": set()
        if manages_admins
        else {p.id for p in people or () if p.role == "tenant_admin"},
        "deployments": await _deployments(page),
        "actions": ACTIONS,
        "effects": EFFECTS,
    }


def _check_of(
    principal_id: str, resource: str, action: str, deployment_id: str | None
) -> GrantCheck:
    """The check the form asks for; a 400 naming the field that is wrong."""
    chosen = _principal_id(principal_id)
    if chosen is None:
        raise BadRequest("choose a principal")
    if not resource.strip():
        raise BadRequest("give a resource to check, such as tool:github.create_issue")
    if action not in ACTIONS:
        raise BadRequest("choose an action")
    deployment = None
    if deployment_id and deployment_id.strip():
        try:
            deployment = uuid.UUID(deployment_id.strip())
        except ValueError:
            raise BadRequest("the deployment must be one of the list (or its id)") from None
    try:
        return GrantCheck(
            principal_id=chosen,
            resource=resource.strip(),
            action=action,  # type: ignore[arg-type]
            deployment_id=deployment,
        )
    except ValidationError:
        raise BadRequest("the check needs a principal, a resource and an action") from None


def _path(page: TenantConsole, principal_id: uuid.UUID | None) -> str:
    base = f"/console/t/{page.t}/grants"
    return f"{base}?principal_id={principal_id}" if principal_id else base


@router.get("", name="console.grants")
async def grants(
    page: TenantConsoleDep,
    principal_id: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    await page.require("grant:*", "read")
    chosen = _principal_id(principal_id)
    result = await service.list_grants(page.session, page.access, PageParams(LIMIT, None), chosen)
    return render(
        page,
        page.request,
        "grants/list.html",
        chosen=chosen,
        items=[GrantRead.model_validate(g) for g in result.items],
        more=result.next_cursor,
        decision=None,
        check=None,
        **await _context(page),
    )


@router.get("/check", name="console.grant_check")
async def check(
    page: TenantConsoleDep,
    cache: PolicyCacheDep,
    effective: EffectiveCheckDep,
    principal_id: Annotated[str, Query(max_length=64)],
    resource: Annotated[str, Query(max_length=512)],
    action: Annotated[str, Query(max_length=16)],
    deployment_id: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    await page.require("grant:*", "read")
    data = _check_of(principal_id, resource, action, deployment_id)
    decision: GrantDecision = await service.check_grant(
        page.session, cache, page.access, data, effective
    )
    result = await service.list_grants(
        page.session, page.access, PageParams(LIMIT, None), data.principal_id
    )
    return render(
        page,
        page.request,
        "grants/list.html",
        chosen=data.principal_id,
        items=[GrantRead.model_validate(g) for g in result.items],
        more=result.next_cursor,
        decision=decision,
        check=data,
        **await _context(page),
    )


@router.post("", name="console.grant_create")
async def create(page: TenantConsoleDep, cache: PolicyCacheDep) -> Response:
    await page.require("grant:*", "write")
    fields = await form_of(page.request)
    try:
        data = GrantCreate(
            principal_id=fields.get("principal_id", ""),  # type: ignore[arg-type]
            resource=fields.get("resource", "").strip(),
            action=fields.get("action", ""),  # type: ignore[arg-type]
            effect=fields.get("effect", ""),  # type: ignore[arg-type]
        )
    except ValidationError:
        raise BadRequest("a grant needs a principal, a resource, an action and an effect") from None
    limit = get_settings_dep(page.request).max_grants_per_principal
    await service.create_grant(page.session, cache, page.access, data, limit=limit)
    return redirect(_path(page, data.principal_id))


@router.post("/{g}/delete", name="console.grant_delete")
async def delete(g: str, page: TenantConsoleDep, cache: PolicyCacheDep) -> Response:
    if not page.access.caller.is_tenant_admin:  # as the API: a tenant_admin may always delete
        await page.require_item("grant", g, "write")
    fields = await form_of(page.request)
    back = _path(page, _principal_id(fields.get("principal_id")))
    if fields.get("confirmed") != "yes":  # the list's button asks first: what goes, and what for
        grant = await service.deletable_grant(page.session, cache, page.access, parse_id(g))
        names = await principal_names(page, [grant.principal_id])
        return render(
            page,
            page.request,
            "grants/delete.html",
            grant=GrantRead.model_validate(grant),
            principal=names[grant.principal_id],
            chosen=fields.get("principal_id", ""),
            back=back,
        )
    await service.delete_grant(page.session, cache, page.access, parse_id(g))
    return redirect(back)
