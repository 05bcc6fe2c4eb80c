"""Tenant routes for catalog snapshots and their diffs (DESIGN §4, §12)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.catalogs import service
from hub.catalogs.schemas import CatalogDiffRead, CatalogRead, CatalogSummary, SnapshotCreate
from hub.core.deps import DatabaseDep, SessionDep
from hub.core.errors import NotFound
from hub.core.openapi import DISCOVERY_FAILED
from hub.core.pagination import PageParamsDep
from hub.core.schemas import Envelope, ListEnvelope
from hub.upstream.deps import UpstreamDep

router = rest_router(prefix="/tenants/{t}/servers/{handle}/catalogs", tags=["catalogs"])


#: the path word for a server's newest catalog version (``…/catalogs/latest``, ``…/latest/diff``)
LATEST = "latest"


def _version(value: str) -> int:
    """A catalog version in a path; anything but a positive integer reads as 404."""
    if not value.isdigit() or not 0 < int(value) < 2**31:
        raise NotFound("catalog version not found")
    return int(value)


@router.post(
    "",
    status_code=201,
    name="catalog.create",
    responses={
        200: {"description": "Nothing changed: the latest version", "model": Envelope[CatalogRead]},
        422: DISCOVERY_FAILED,
    },
)
async def create_snapshot(
    handle: str,
    response: Response,
    db: DatabaseDep,
    session: SessionDep,
    ctx: UpstreamDep,
    access: Annotated[TenantAccess, authorize("catalog", "write", item="handle", limit="snapshot")],
    body: SnapshotCreate | None = None,
) -> Envelope[CatalogRead]:
    """Discover the server and snapshot its tools: 201 with a new version, or 200 with the
    latest when nothing changed since it. The body is empty or ``{}``."""
    catalog, created = await service.snapshot(db, session, ctx, access, handle)
    if not created:
        response.status_code = 200
    data = CatalogRead.model_validate(catalog)
    data.created = created
    return Envelope(data=data)


@router.get("", name="catalog.list")
async def list_catalogs(
    handle: str,
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("catalog", "read", item="handle")],
) -> ListEnvelope[CatalogSummary]:
    """List a server's catalog versions (without their tools)."""
    result = await service.list_catalogs(session, access, handle, page)
    return ListEnvelope.of(result, CatalogSummary)


# Declared before "/{version}", which would read "latest" as a missing version.
@router.get("/latest", name="catalog.latest")
async def get_latest_catalog(
    handle: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("catalog", "read", item="handle")],
) -> Envelope[CatalogRead]:
    """The server's newest catalog version, tools included (404 before its first snapshot)."""
    catalog = await service.get_latest_catalog(session, access.tenant_id, handle)
    return Envelope(data=CatalogRead.model_validate(catalog))


@router.get("/{version}", name="catalog.get")
async def get_catalog(
    handle: str,
    version: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("catalog", "read", item="handle")],
) -> Envelope[CatalogRead]:
    """One catalog version, tools included."""
    catalog = await service.get_catalog(session, access.tenant_id, handle, _version(version))
    return Envelope(data=CatalogRead.model_validate(catalog))


@router.get("/{version}/diff", name="catalog.diff")
async def diff_catalog(
    handle: str,
    version: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("catalog", "read", item="handle")],
    from_: Annotated[int, Query(alias="from", ge=1, lt=2**31)],
) -> Envelope[CatalogDiffRead]:
    """Tools added, removed and changed between two versions (``latest`` names the newest, as
    in ``…/catalogs/latest``); each changed tool names its differing fields with their values
    ``before`` (version ``from``) and ``after``."""
    to = None if version == LATEST else _version(version)
    diff = await service.diff_catalogs(session, access, handle, to, from_)
    return Envelope(data=diff)
