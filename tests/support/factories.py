"""Small async factories that write real rows through the hub's own services.

Each writes in the scope of the tenant it writes for (:func:`hub.core.rls.scope`): on PostgreSQL
the tests' database is the app's role, under row-level security."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import insert

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.tenancy import TenantId, system_scope
from hub.grants.service import apply_role_template
from hub.models import Grant, Principal, Tenant
from hub.principals.api_keys import issue_key
from hub.principals.bootstrap import bootstrap_platform_admin
from tests.conftest import TEST_PEPPER

PEPPER = TEST_PEPPER.encode()


@dataclass
class Actor:
    principal_id: uuid.UUID
    tenant_id: uuid.UUID | None
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.key}"}


def scope_of(tenant_id: uuid.UUID) -> TenantId:
    return system_scope(tenant_id, reason="test factory")


async def make_tenant(db: Database, slug: str | None = None, status: str = "active") -> Tenant:
    tenant = Tenant(
        id=uuid.uuid4(),
        slug=slug or f"t-{uuid.uuid4().hex[:10]}",
        name="Test tenant",
        status=status,
        created_at=clock.now(),
    )
    async with db.session() as session:
        session.add(tenant)
    return tenant


async def make_principal(
    db: Database,
    tenant_id: uuid.UUID,
    *,
    role: str | None = "tenant_admin",
    kind: str = "user",
    name: str = "someone",
) -> Actor:
    principal_id = uuid.uuid4()
    with rls.scope(scope_of(tenant_id)):  # the tenant's rows, under row-level security
        async with db.session() as session:
            session.add(
                Principal(
                    id=principal_id,
                    tenant_id=tenant_id,
                    kind=kind,
                    name=name,
                    role=role,
                    is_platform_admin=False,
                    grants_version=0,
                    created_at=clock.now(),
                )
            )
            await session.flush()
            await apply_role_template(session, scope_of(tenant_id), principal_id, role, None)
            _row, key = issue_key(
                session, PEPPER, tenant_id=tenant_id, principal_id=principal_id, expires_at=None
            )
    return Actor(principal_id=principal_id, tenant_id=tenant_id, key=key)


async def make_platform_admin(db: Database) -> Actor:
    key = await bootstrap_platform_admin(db, PEPPER, force=True)
    from hub.auth.key_format import parse_key
    from hub.auth.repository import find_key

    parsed = parse_key(key)
    assert parsed is not None
    with rls.scope(rls.PLATFORM):
        async with db.session(write=False) as session:
            record = await find_key(session, parsed.key_id)
    assert record is not None
    return Actor(principal_id=record.principal_id, tenant_id=None, key=key)


async def make_server(
    db: Database, tenant_id: uuid.UUID, handle: str, url: str = "https://mcp.example.com/mcp"
) -> uuid.UUID:
    from hub.models import Server

    server_id = uuid.uuid4()
    with rls.scope(scope_of(tenant_id)):  # the tenant's rows, under row-level security
        async with db.session() as session:
            session.add(
                Server(
                    id=server_id,
                    tenant_id=tenant_id,
                    handle=handle,
                    url=url,
                    created_at=clock.now(),
                    updated_at=clock.now(),
                )
            )
    return server_id


async def make_catalog(
    db: Database,
    tenant_id: uuid.UUID,
    server_id: uuid.UUID,
    tools: list[dict[str, object]],
    version: int = 1,
) -> uuid.UUID:
    from hub.catalogs.canonical import catalog_sha256, sorted_tools, tool_sha256
    from hub.models import Catalog

    ordered = sorted_tools(tools)
    catalog_id = uuid.uuid4()
    with rls.scope(scope_of(tenant_id)):  # the tenant's rows, under row-level security
        async with db.session() as session:
            session.add(
                Catalog(
                    id=catalog_id,
                    tenant_id=tenant_id,
                    server_id=server_id,
                    version=version,
                    sha256=catalog_sha256(
                        protocol_version="2026-07-28",
                        server_info={"name": "t"},
                        capabilities={},
                        instructions=None,
                        tools=ordered,
                    ),
                    protocol_version="2026-07-28",
                    server_info={"name": "t"},
                    capabilities={},
                    instructions=None,
                    tools=ordered,
                    tool_hashes={str(t["name"]): tool_sha256(t) for t in ordered},
                    discovered_at=clock.now(),
                    discovered_by=None,
                )
            )
    return catalog_id


def tool(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


async def make_authorization(
    db: Database, tenant_id: uuid.UUID, initiator_id: uuid.UUID, server_id: uuid.UUID | None = None
) -> uuid.UUID:
    """A pending OAuth authorization row (its state is unknown to anyone: it is never redeemed)."""
    import hashlib
    from datetime import timedelta

    from hub.models import OAuthAuthorization

    authorization_id = uuid.uuid4()
    now = clock.now()
    with rls.scope(scope_of(tenant_id)):  # the tenant's rows, under row-level security
        async with db.session() as session:
            session.add(
                OAuthAuthorization(
                    id=authorization_id,
                    tenant_id=tenant_id,
                    state_hash=hashlib.sha256(uuid.uuid4().bytes).hexdigest(),
                    status="pending",
                    expires_at=now + timedelta(minutes=10),
                    created_at=now,
                    initiator_id=initiator_id,
                    server_id=server_id,
                    step_up=False,
                    server_url="https://mcp.example.com/mcp",
                    resource="https://mcp.example.com/mcp",
                    issuer="https://as.example.com",
                    iss_required=False,
                    token_endpoint="https://as.example.com/token",
                    client_id="factory-client",
                    auth_method="none",
                    redirect_uri="http://hub.test/oauth/callback",
                )
            )
    return authorization_id


async def make_grants(db: Database, tenant_id: uuid.UUID, principal_id: uuid.UUID, n: int) -> None:
    """``n`` ``allow`` grants (``tool:srv<i>.tool<i>``, call) for the principal, written straight
    to the table in one statement (no version bump: for a principal about to be read anew)."""
    rows = [
        {
            "id": uuid.uuid4(),
            "tenant_id": tenant_id,
            "principal_id": principal_id,
            "resource": f"tool:srv{i}.tool{i}",
            "action": "call",
            "effect": "allow",
            "conditions": {},
            "created_at": clock.now(),
        }
        for i in range(n)
    ]
    if not rows:
        return
    with rls.scope(scope_of(tenant_id)):
        async with db.session() as session:
            await session.execute(insert(Grant), rows)
