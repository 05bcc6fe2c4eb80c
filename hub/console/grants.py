"""The grants page: one principal's grants, add one, delete one, and check a decision
(DESIGN §8, §14), through the grants service with the API's authorisation (``grant`` read and
write; a tenant_admin may always delete). The check is a GET form: it reads only."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query
from pydantic import ValidationError
from starlette.responses import Response

from hub.console.routing import console_router
from hub.console.web import TenantConsole, TenantConsoleDep, form_of, redirect, render
from hub.core.deps import get_settings_dep
from hub.core.errors import BadRequest
from hub.core.pagination import PageParams
from hub.core.paths import parse_id
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
        principals=await _principals(page),
        chosen=chosen,
        items=[GrantRead.model_validate(g) for g in result.items],
        more=result.next_cursor,
        actions=ACTIONS,
        effects=EFFECTS,
        decision=None,
        check=None,
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
    try:
        data = GrantCheck(
            principal_id=principal_id,  # type: ignore[arg-type]
            resource=resource.strip(),
            action=action,  # type: ignore[arg-type]
            deployment_id=deployment_id or None,  # type: ignore[arg-type]
        )
    except ValidationError:
        raise BadRequest("the check needs a principal, a resource and an action") from None
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
        principals=await _principals(page),
        chosen=data.principal_id,
        items=[GrantRead.model_validate(g) for g in result.items],
        more=result.next_cursor,
        actions=ACTIONS,
        effects=EFFECTS,
        decision=decision,
        check=data,
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
    await service.delete_grant(page.session, cache, page.access, parse_id(g))
    return redirect(_path(page, _principal_id(fields.get("principal_id"))))
