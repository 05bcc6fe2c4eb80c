"""Role protection across the route matrix: every mutating route that can touch a principal's
row, keys or grants refuses a non-admin acting on a ``tenant_admin`` (DESIGN §8)."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from hub.models import ApiKey, Grant
from tests.peers.fixtures import handmade_peer, oauth_peers
from tests.support.databases import owner_session
from tests.support.factories import make_principal, scope_of
from tests.support.route_world import AUDIT_TABLES, ROUTES, World, call, settings, snapshot, world

__all__ = ["handmade_peer", "oauth_peers", "settings", "world"]

#: Routes whose object is (or belongs to) the principal named by ``p`` or ``principal_id``.
PRINCIPAL_ROUTES = {
    "principal.update",
    "principal.delete",
    "api_key.create",
    "api_key.revoke",
    "api_key.roll",
    "grant.create",
    "grant.delete",
}


async def test_every_route_touching_a_tenant_admin_refuses_a_non_admin(world: World) -> None:
    t = world.a_ids["t"]
    admin_id = world.a_admin.principal_id
    manager = await make_principal(world.db, uuid.UUID(t), role=None, name="manager")
    async with owner_session(world.db) as session:
        for resource in ("principal:*", "grant:*"):
            session.add(
                Grant(
                    id=uuid.uuid4(),
                    tenant_id=scope_of(uuid.UUID(t)).value,
                    principal_id=manager.principal_id,
                    resource=resource,
                    action="*",
                    effect="allow",
                    conditions={},
                )
            )
    async with owner_session(world.db, write=False) as session:
        key = (
            await session.execute(select(ApiKey.id).where(ApiKey.principal_id == admin_id))
        ).scalar_one()
        grant = (
            await session.execute(select(Grant.id).where(Grant.principal_id == admin_id))
        ).scalar_one()
    ids = {**world.a_ids, "p": str(admin_id), "k": str(key), "g": str(grant)}
    mutating = {name for name, r in ROUTES.items() if r.mutating and "{p}" in r.path}
    assert mutating <= PRINCIPAL_ROUTES
    assert (await world.client.get("/whoami", headers=manager.headers)).status_code == 200
    before = await snapshot(world.db, t, skip=AUDIT_TABLES)  # last_used_at written above
    for name in sorted(PRINCIPAL_ROUTES):
        response = await call(world, ROUTES[name], ids, manager)
        assert response.status_code == 403, (name, response.text)
    assert await snapshot(world.db, t, skip=AUDIT_TABLES) == before
