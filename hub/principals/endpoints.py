"""Tenant routes for principals and their keys; the platform admin's keys; ``/whoami``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from hub.auth.caller import TenantAccess
from hub.auth.deps import CallerDep
from hub.authz.deps import PlatformAdminDep, authorize
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep, SettingsDep
from hub.core.pagination import PageParamsDep
from hub.core.paths import parse_id
from hub.core.schemas import Envelope, ListEnvelope
from hub.core.settings import Settings
from hub.grants.deps import PolicyCacheDep
from hub.principals import api_keys, service
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

router = rest_router(prefix="/tenants/{t}/principals", tags=["principals"])
platform_router = rest_router(prefix="/platform/keys", tags=["platform"])
whoami_router = rest_router(tags=["principals"])


def _pepper(settings: Settings) -> bytes:
    return settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""


def _created(issued: api_keys.IssuedKey) -> Envelope[KeyCreated]:
    row, plaintext = issued
    return Envelope(
        data=KeyCreated(
            id=row.id,
            key=plaintext,
            prefix=row.prefix,
            last4=row.last4,
            expires_at=row.expires_at,
            created_at=row.created_at,
        )
    )


@router.post("", status_code=201, name="principal.create")
async def create_principal(
    body: PrincipalCreate,
    session: SessionDep,
    cache: PolicyCacheDep,
    access: Annotated[TenantAccess, authorize("principal", "write")],
) -> Envelope[PrincipalRead]:
    """Create a principal; ``role`` applies that role template as grants."""
    principal = await service.create_principal(session, cache, access, body)
    return Envelope(data=PrincipalRead.model_validate(principal))


@router.get("", name="principal.list")
async def list_principals(
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("principal", "read")],
) -> ListEnvelope[PrincipalRead]:
    """List the tenant's principals."""
    return ListEnvelope.of(await service.list_principals(session, access, page), PrincipalRead)


@router.get("/{p}", name="principal.get")
async def get_principal(
    p: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "read", item="p")],
) -> Envelope[PrincipalRead]:
    """Get a principal (deleted principals stay readable, with status ``disabled``)."""
    principal = await service.get_principal(session, access, parse_id(p))
    return Envelope(data=PrincipalRead.model_validate(principal))


@router.patch("/{p}", name="principal.update")
async def update_principal(
    p: str,
    body: PrincipalUpdate,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> Envelope[PrincipalRead]:
    """Rename a principal."""
    principal = await service.update_principal(session, access, parse_id(p), body)
    return Envelope(data=PrincipalRead.model_validate(principal))


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
) -> Envelope[KeyCreated]:
    """Issue an API key for a principal; the key appears in this response only."""
    pepper = _pepper(settings)
    return _created(await api_keys.create_key(session, cache, access, pepper, parse_id(p), body))


@router.get("/{p}/keys", name="api_key.list")
async def list_keys(
    p: str,
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> ListEnvelope[KeyRead]:
    """List a principal's keys: prefix, last four characters, dates; never the key."""
    return ListEnvelope.of(await api_keys.list_keys(session, access, parse_id(p), page), KeyRead)


@router.delete("/{p}/keys/{k}", status_code=204, name="api_key.revoke")
async def revoke_key(
    p: str,
    k: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("principal", "write", item="p")],
) -> Response:
    """Revoke a key; the very next request with it is refused."""
    await api_keys.revoke_key(session, access, parse_id(p), parse_id(k))
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
) -> Envelope[KeyCreated]:
    """Issue a replacement key; the old one keeps working until ``old_key_expires_at``."""
    issued = await api_keys.roll_key(
        session, cache, access, _pepper(settings), parse_id(p), parse_id(k), body
    )
    return _created(issued)


@platform_router.post("", status_code=201, name="platform_key.create")
async def create_platform_key(
    body: KeyCreate, caller: PlatformAdminDep, session: SessionDep, settings: SettingsDep
) -> Envelope[KeyCreated]:
    """Issue another key for the calling platform admin."""
    return _created(await api_keys.create_platform_key(session, caller, _pepper(settings), body))


@platform_router.get("", name="platform_key.list")
async def list_platform_keys(
    caller: PlatformAdminDep, session: SessionDep, page: PageParamsDep
) -> ListEnvelope[KeyRead]:
    """List the calling platform admin's keys."""
    return ListEnvelope.of(await api_keys.list_platform_keys(session, caller, page), KeyRead)


@platform_router.delete("/{k}", status_code=204, name="platform_key.revoke")
async def revoke_platform_key(k: str, caller: PlatformAdminDep, session: SessionDep) -> Response:
    """Revoke one of the calling platform admin's keys."""
    await api_keys.revoke_platform_key(session, caller, parse_id(k))
    return Response(status_code=204)


@platform_router.post("/{k}/roll", status_code=201, name="platform_key.roll")
async def roll_platform_key(
    k: str, body: KeyRoll, caller: PlatformAdminDep, session: SessionDep, settings: SettingsDep
) -> Envelope[KeyCreated]:
    """Replace one of the calling platform admin's keys."""
    issued = await api_keys.roll_platform_key(session, caller, _pepper(settings), parse_id(k), body)
    return _created(issued)


@whoami_router.get("/whoami", name="whoami")
async def whoami(caller: CallerDep, session: SessionDep) -> Envelope[WhoAmI]:
    """The calling principal, its tenant, its grants and (for an agent) its deployments."""
    return Envelope(data=await service.whoami(session, caller))
