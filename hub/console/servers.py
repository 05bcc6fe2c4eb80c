"""The servers and catalogs pages: each server, its catalog versions, one version's tools, and
the diff of two versions with each changed field's value before and after (DESIGN §4, §14).
A server page offers the OAuth connect button (``POST``: it starts an authorization through the
OAuth service and links to the authorization server)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Query
from starlette.responses import Response

from hub.catalogs import service as catalogs
from hub.catalogs.schemas import CatalogRead, CatalogSummary
from hub.console.routing import console_router
from hub.console.web import TenantConsole, TenantConsoleDep, render
from hub.core.deps import DatabaseDep
from hub.core.errors import NotFound
from hub.core.pagination import PageParams
from hub.credentials import service as credentials
from hub.oauth import service as oauth
from hub.oauth.deps import OAuthContextDep
from hub.oauth.schemas import AuthorizationCreate
from hub.servers import service
from hub.servers.schemas import ServerRead

__all__ = ["router"]

router = console_router("/t/{t}/servers")

LIMIT = 200
#: the tools of a catalog version one page shows
TOOLS_PER_PAGE = 100


def _pages(start: int, total: int) -> dict[str, Any]:
    """Where a page of :data:`TOOLS_PER_PAGE` from ``start`` is, and its neighbours' starts."""
    following = start + TOOLS_PER_PAGE
    return {
        "start": start,
        "total": total,
        "previous": max(start - TOOLS_PER_PAGE, 0) if start else None,
        "following": following if following < total else None,
    }


def _version(value: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 2**31:
        raise NotFound("catalog version not found")
    return int(value)


async def _credential_names(page: TenantConsole) -> dict[uuid.UUID, str]:
    """id → name of the tenant's credentials, when the caller may list them (else ids show)."""
    if not await page.may("credential:*", "read"):
        return {}
    found = await credentials.list_credentials(page.session, page.access, PageParams(LIMIT, None))
    return {c.id: c.name for c in found.items}


@router.get("", name="console.servers")
async def servers(page: TenantConsoleDep) -> Response:
    await page.require("server:*", "read")
    result = await service.list_servers(page.session, page.access, PageParams(LIMIT, None))
    items = [ServerRead.model_validate(s) for s in result.items]
    return render(
        page,
        page.request,
        "servers/list.html",
        items=items,
        more=result.next_cursor,
        credential_names=await _credential_names(page),
    )


@router.get("/{handle}", name="console.server")
async def server(handle: str, page: TenantConsoleDep) -> Response:
    await page.require_item("server", handle, "read")
    item = await service.read_server(page.session, page.access.tenant_id, handle)
    versions: list[CatalogSummary] | None = None
    if await page.may(f"catalog:{item.handle}", "read"):
        result = await catalogs.list_catalogs(
            page.session, page.access, item.handle, PageParams(LIMIT, None)
        )
        versions = [CatalogSummary.model_validate(c) for c in result.items]
        versions.reverse()  # newest first
    return render(
        page,
        page.request,
        "servers/detail.html",
        item=item,
        versions=versions,
        may_connect=await page.may("credential:*", "write"),
        credential_names=await _credential_names(page),
    )


@router.get("/{handle}/catalogs/{version}", name="console.catalog")
async def catalog(
    handle: str,
    version: str,
    page: TenantConsoleDep,
    start: Annotated[int, Query(ge=0, le=2**31)] = 0,
) -> Response:
    """One version's tools, :data:`TOOLS_PER_PAGE` at a time: each definition is shown whole, and
    a catalog can hold megabytes of them (12.5 MB, 5,000 tools, took 1.3 s to format alone)."""
    await page.require_item("catalog", handle, "read")
    row = await catalogs.get_catalog(page.session, page.access.tenant_id, handle, _version(version))
    item = CatalogRead.model_validate(row)
    total = len(item.tools)
    start = min(start, max(total - 1, 0))
    shown = item.tools[start : start + TOOLS_PER_PAGE]
    return render(
        page,
        page.request,
        "servers/catalog.html",
        handle=handle,
        item=item,
        tools=shown,
        **_pages(start, total),
    )


@router.get("/{handle}/diff", name="console.catalog_diff")
async def diff(
    handle: str,
    page: TenantConsoleDep,
    from_: Annotated[str, Query(alias="from", max_length=12)],
    to: Annotated[str, Query(max_length=12)],
    start: Annotated[int, Query(ge=0, le=2**31)] = 0,
) -> Response:
    """The diff of two versions; the changed tools, each field before and after in full,
    :data:`TOOLS_PER_PAGE` at a time (as a version's own page shows its tools)."""
    await page.require_item("catalog", handle, "read")
    result = await catalogs.diff_catalogs(
        page.session, page.access, handle, _version(to), _version(from_)
    )
    total = len(result.changed)
    start = min(start, max(total - 1, 0))
    return render(
        page,
        page.request,
        "servers/diff.html",
        handle=handle,
        diff=result,
        changed=result.changed[start : start + TOOLS_PER_PAGE],
        **_pages(start, total),
    )


@router.post("/{handle}/oauth", name="console.server_oauth")
async def connect(
    handle: str, page: TenantConsoleDep, db: DatabaseDep, ctx: OAuthContextDep
) -> Response:
    """Start an OAuth authorization for the server; the page links to the authorization server
    (a link, not a redirect: the console's CSP allows forms to post to the hub only)."""
    await page.require("credential:*", "write")
    started = await oauth.create_authorization(
        db, page.session, ctx, page.access, AuthorizationCreate(server=handle)
    )
    return render(
        page,
        page.request,
        "servers/oauth.html",
        subject=handle,
        back=f"/console/t/{page.t}/servers/{quote(handle, safe='')}",
        url=started.authorization_url,
        expires_at=started.row.expires_at,
    )
