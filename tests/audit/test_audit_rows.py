"""Audit rows of successful requests: one row per mutation, none per read, no key material.

Walks the same routes and tenants as the authorisation matrix (``tests/support/route_world.py``).
"""

from __future__ import annotations

import json

from sqlalchemy import select, text

from hub.models import AuditEvent
from tests.peers.fixtures import handmade_peer, oauth_peers
from tests.support.databases import as_owner, owner_session
from tests.support.route_world import ROUTES, World, call, settings, world
from tests.support.stories import audit_count

__all__ = ["handmade_peer", "oauth_peers", "settings", "world"]


async def test_every_mutation_writes_exactly_one_audit_row(world: World) -> None:
    # deletes last, and disabling tenant A last of all
    order = sorted(
        ROUTES.items(), key=lambda kv: (kv[1].method == "DELETE", kv[0] == "tenant.disable")
    )
    for name, route in order:
        if not route.mutating:
            continue
        assert route.prepare is not None, name
        ids = await route.prepare(world)
        actor = world.platform if route.kind == "platform" else world.a_admin
        before = await audit_count(world.db)
        response = await call(world, route, ids, actor)
        assert response.status_code == route.success, (name, response.text)
        async with owner_session(world.db, write=False) as session:
            newest = (
                await session.execute(
                    select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id).limit(1)
                )
            ).scalar_one()
        assert await audit_count(world.db) == before + 1, name
        assert newest.action == name
        assert newest.outcome == "success"
        assert newest.actor_id == actor.principal_id
        assert newest.request_id == response.headers["x-request-id"]
    # reads write nothing
    before = await audit_count(world.db)
    for route in ROUTES.values():
        if not route.mutating and route.kind == "tenant":
            await call(world, route, world.a_ids, world.a_admin)
    assert await audit_count(world.db) == before


async def test_audit_rows_hold_no_key_material(world: World) -> None:
    async with as_owner(world.db.engine) as owner, owner.connect() as conn:  # every row
        rows = (await conn.execute(text("SELECT * FROM audit_events"))).all()
    dumped = json.dumps([repr(r) for r in rows])
    assert world.a_admin.key not in dumped
    assert world.a_admin.key[17:49] not in dumped
