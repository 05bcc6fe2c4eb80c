"""Tenant routes for principals and their keys; the platform admin's keys; ``/whoami``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request, Response

from hub.auth.caller import TenantAccess
from hub.auth.deps import CallerDep, PlatformAdminDep, PolicyCacheDep, authorize, parse_id
from hub.core.deps import SessionDep, SettingsDep
from hub.core.errors import Unauthorized
from hub.core.pagination import Page, PageParamsDep
from hub.grants.schemas import GrantRead
from hub.models import ApiKey
from hub.principals import keys, repository, service
from hub.principals.schemas import (
    KeyCreate,
    KeyCreated,
    KeyRead,
    KeyRoll,
    PrincipalCreate,
    PrincipalRead,
    PrincipalUpdate,
    WhoAmI,
)

router = APIRouter(prefix="/tenants/{t}/principals", tags=["principals"])
platform_router = APIRouter(prefix="/platform/keys", tags=["platform"])
whoami_router = APIRouter(tags=["principals"])


def _pepper(settings: Any) -> bytes:
    return bytes(settings.api_key_pepper.get_secret_value().encode())


def _created(issued: keys.IssuedKey) -> dict[str, Any]:
    row, plaintext = issued
    return {
        "data": KeyCreated(
            id=row.id,
            key=plaintext,
            prefix=row.prefix,
            last4=row.last4,
            expires_at=row.expires_at,
            created_at=row.created_at,
        )
    }


def _key_page(page: Page[ApiKey]) -> dict[str, Any]:
    return {
        "data": [KeyRead.model_validate(k) for k in page.items],
        "next_cursor": page.next_cursor,
    }


@router.post("", status_code=201, name="principal.create")
async def create_principal(
    body: PrincipalCreate,
    session: SessionDep,
    cache: PolicyCacheDep,
    access: Annotated[TenantAccess, authorize("principal", "write")],
) -> dict[str, Any]:
    """Create a principal; ``role`` applies that role template as grants."""
    principal = await service.create_principal(session, cache, access, body)
    return {"data": PrincipalRead.model_validate(principal)}


@router.get("", name="principal.list")
async def list_principals(
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("principal", "read")],
) -> dict[str, Any]:
    """List the tenant's principals."""
    result = await service.list_principals(session, access, page)
    return {
        "data": [PrincipalRead.model_validate(p) for p in result.items],
        "next_cursor": result.next_cursor,
    }


@router.get("/{p}", name="principal.get")
async def get_principal(
    p: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "read", item="p")],
) -> dict[str, Any]:
    """Get a principal (deleted principals stay readable, with status ``disabled``)."""
    principal = await service.get_principal(session, access, parse_id(p))
    return {"data": PrincipalRead.model_validate(principal)}


@router.patch("/{p}", name="principal.update")
async def update_principal(
    p: str,
    body: PrincipalUpdate,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> dict[str, Any]:
    """Rename a principal."""
    principal = await service.update_principal(session, access, parse_id(p), body)
    return {"data": PrincipalRead.model_validate(principal)}


@router.delete("/{p}", status_code=204, name="principal.delete")
async def delete_principal(
    p: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> Response:
    """Soft-delete a principal; its keys stop working at once."""
    await service.delete_principal(session, access, parse_id(p))
    return Response(status_code=204)


@router.post("/{p}/keys", status_code=201, name="api_key.create")
async def create_key(
    p: str,
    body: KeyCreate,
    session: SessionDep,
    settings: SettingsDep,
    cache: PolicyCacheDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> dict[str, Any]:
    """Issue an API key for a principal; the key appears in this response only."""
    issued = await keys.create_key(session, cache, access, _pepper(settings), parse_id(p), body)
    return _created(issued)


@router.get("/{p}/keys", name="api_key.list")
async def list_keys(
    p: str,
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> dict[str, Any]:
    """List a principal's keys: prefix, last four characters, dates; never the key."""
    return _key_page(await keys.list_keys(session, access, parse_id(p), page))


@router.delete("/{p}/keys/{k}", status_code=204, name="api_key.revoke")
async def revoke_key(
    p: str,
    k: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> Response:
    """Revoke a key; the very next request with it is refused."""
    await keys.revoke_key(session, access, parse_id(p), parse_id(k))
    return Response(status_code=204)


@router.post("/{p}/keys/{k}/roll", status_code=201, name="api_key.roll")
async def roll_key(
    p: str,
    k: str,
    body: KeyRoll,
    session: SessionDep,
    settings: SettingsDep,
    cache: PolicyCacheDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> dict[str, Any]:
    """Issue a replacement key; the old one keeps working until ``old_key_expires_at``."""
    issued = await keys.roll_key(
        session, cache, access, _pepper(settings), parse_id(p), parse_id(k), body
    )
    return _created(issued)


@platform_router.post("", status_code=201, name="platform_key.create")
async def create_platform_key(
    body: KeyCreate, caller: PlatformAdminDep, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """Issue another key for the calling platform admin."""
    return _created(await keys.create_platform_key(session, caller, _pepper(settings), body))


@platform_router.get("", name="platform_key.list")
async def list_platform_keys(
    caller: PlatformAdminDep, session: SessionDep, page: PageParamsDep
) -> dict[str, Any]:
    """List the calling platform admin's keys."""
    return _key_page(await keys.list_platform_keys(session, caller, page))


@platform_router.delete("/{k}", status_code=204, name="platform_key.revoke")
async def revoke_platform_key(k: str, caller: PlatformAdminDep, session: SessionDep) -> Response:
    """Revoke one of the calling platform admin's keys."""
    await keys.revoke_platform_key(session, caller, parse_id(k))
    return Response(status_code=204)


@platform_router.post("/{k}/roll", status_code=201, name="platform_key.roll")
async def roll_platform_key(
    k: str, body: KeyRoll, caller: PlatformAdminDep, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """Replace one of the calling platform admin's keys."""
    issued = await keys.roll_platform_key(session, caller, _pepper(settings), parse_id(k), body)
    return _created(issued)


@whoami_router.get("/whoami", name="whoami")
async def whoami(request: Request, caller: CallerDep, session: SessionDep) -> dict[str, Any]:
    """The calling principal, its tenant and its grants."""
    if caller.tenant_id is None:
        principal = await repository.get_platform_principal(session, caller.principal_id)
        grants: list[Any] = []
    else:
        principal = await repository.get_principal(session, caller.tenant_id, caller.principal_id)
        grants = list(await repository.grants_of(session, caller.tenant_id, caller.principal_id))
    if principal is None:  # deleted between authentication and now
        raise Unauthorized()
    body = WhoAmI(
        principal=PrincipalRead.model_validate(principal),
        tenant_id=caller.tenant_id.value if caller.tenant_id else None,
        is_platform_admin=caller.is_platform_admin,
        grants=[GrantRead.model_validate(g) for g in grants],
    )
    return {"data": body}
