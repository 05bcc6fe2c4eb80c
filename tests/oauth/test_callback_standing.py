"""A pending authorization does not outlive what allowed it (stop 53): the callback re-reads the
tenant and the initiator after its claim, and refuses before any token request; the refresher
keeps no disabled tenant's tokens alive. Also the callback's own words for an expired state and
an over-long code."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx2
from sqlalchemy import select, update

from hub.core import clock
from hub.core.components import components_of
from hub.egress import Fetcher
from hub.models import Credential, OAuthAuthorization, Tenant
from hub.oauth.context import OAuthContext
from hub.oauth.worker import refresh_pass
from tests.conftest import ClockControl
from tests.oauth.conftest import Hub, OAuthPeersStarter
from tests.oauth.support import redirect_query
from tests.support.databases import owner_session
from tests.support.factories import Actor, make_platform_admin, make_principal
from tests.support.stories import audit_events


def _reason_of_page(response: httpx2.Response) -> str:
    return response.text.split("<dt>Reason code</dt><dd>", 1)[1].split("</dd>", 1)[0]


async def _consented(hub: Hub, url: str, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Start a flow for server ``linear`` as ``headers``' principal and consent: its id and the
    query the authorization server sends the browser back with."""
    started = await hub.client.post(
        hub.owner.url("oauth", "authorizations"), json={"server": "linear"}, headers=headers
    )
    assert started.status_code == 201, started.text
    data = started.json()["data"]
    return data["id"], await redirect_query(
        components_of(hub.app).get(Fetcher), data["authorization_url"]
    )


async def _flow(hub: Hub, authorization_id: str) -> OAuthAuthorization:
    async with owner_session(hub.db, write=False) as session:
        row = await session.get(OAuthAuthorization, uuid.UUID(authorization_id))
    assert row is not None
    return row


async def _credentials(hub: Hub) -> list[Credential]:
    async with owner_session(hub.db, write=False) as session:
        return list((await session.execute(select(Credential))).scalars())


async def _refused_before_any_token(
    hub: Hub, peers: Any, authorization_id: str, query: dict[str, str], reason: str
) -> None:
    refused = await hub.client.get("/oauth/callback", params=query)
    assert refused.status_code == 400, refused.text
    assert _reason_of_page(refused) == reason
    assert "Not connected" in refused.text
    assert peers.auth.token_requests() == []
    assert await _credentials(hub) == []
    flow = await _flow(hub, authorization_id)
    assert (flow.status, flow.reason) == ("failed", reason)
    events = await audit_events(hub.db, action="oauth.callback", outcome="failed")
    assert [e.details["reason"] for e in events] == [reason]


async def _grant(hub: Hub, who: Actor, resource: str, action: str) -> str:
    made = await hub.client.post(
        hub.owner.url("grants"),
        json={
            "principal_id": str(who.principal_id),
            "resource": resource,
            "action": action,
            "effect": "allow",
        },
        headers=hub.headers,
    )
    assert made.status_code == 201, made.text
    grant_id: str = made.json()["data"]["id"]
    return grant_id


async def test_a_disabled_tenant_s_pending_authorization_is_refused_at_the_callback(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    authorization_id, query = await _consented(hub, peers.peer.url, hub.headers)
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Tenant).where(Tenant.id == hub.owner.tenant_id).values(status="disabled")
        )
    await _refused_before_any_token(hub, peers, authorization_id, query, "tenant_disabled")


async def test_a_deleted_initiator_s_pending_authorization_is_refused_at_the_callback(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    other = await make_principal(hub.db, hub.owner.tenant_id, name="leaver")
    authorization_id, query = await _consented(hub, peers.peer.url, other.headers)
    deleted = await hub.client.delete(
        hub.owner.url("principals", other.principal_id), headers=hub.headers
    )
    assert deleted.status_code == 204, deleted.text
    await _refused_before_any_token(hub, peers, authorization_id, query, "initiator_disabled")


async def test_an_initiator_who_lost_the_permission_is_refused_at_the_callback(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    """A deployer may write servers; a grant gave it ``credential:*`` write, which starting a
    flow needs, and was removed before the consent came back."""
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    deployer = await make_principal(hub.db, hub.owner.tenant_id, role="deployer", name="dep")
    grant_id = await _grant(hub, deployer, "credential:*", "write")
    authorization_id, query = await _consented(hub, peers.peer.url, deployer.headers)
    removed = await hub.client.delete(hub.owner.url("grants", grant_id), headers=hub.headers)
    assert removed.status_code == 204, removed.text
    await _refused_before_any_token(hub, peers, authorization_id, query, "initiator_forbidden")


async def test_an_initiator_who_still_holds_the_permission_connects(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    deployer = await make_principal(hub.db, hub.owner.tenant_id, role="deployer", name="dep")
    await _grant(hub, deployer, "credential:*", "write")
    _authorization_id, query = await _consented(hub, peers.peer.url, deployer.headers)
    done = await hub.client.get("/oauth/callback", params=query)
    assert done.status_code == 200, done.text
    assert len(await _credentials(hub)) == 1


async def test_the_platform_admin_s_authorization_completes(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    """The platform admin belongs to no tenant: the callback reads it in the platform's scope."""
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    admin = await make_platform_admin(hub.db)
    _authorization_id, query = await _consented(hub, peers.peer.url, admin.headers)
    done = await hub.client.get("/oauth/callback", params=query)
    assert done.status_code == 200, done.text
    assert len(await _credentials(hub)) == 1


async def test_an_expired_state_is_answered_state_expired_and_audited(
    hub: Hub, oauth_peers: OAuthPeersStarter, clock_control: ClockControl
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    authorization_id, query = await _consented(hub, peers.peer.url, hub.headers)
    clock_control.advance(601)
    await _refused_before_any_token(hub, peers, authorization_id, query, "state_expired")
    replay = await hub.client.get("/oauth/callback", params=query)  # spent now: unknown
    assert replay.status_code == 400
    assert _reason_of_page(replay) == "state_invalid"


async def test_an_over_long_code_has_its_own_reason(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    authorization_id, query = await _consented(hub, peers.peer.url, hub.headers)
    query["code"] = "c" * 5000
    await _refused_before_any_token(hub, peers, authorization_id, query, "code_too_long")


async def test_the_refresher_keeps_no_disabled_tenant_s_tokens_alive(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    async with owner_session(hub.db) as session:  # due, and half its lifetime gone
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(
                updated_at=clock.now() - timedelta(seconds=3600),
                expires_at=clock.now() + timedelta(seconds=30),
            )
        )
        await session.execute(
            update(Tenant).where(Tenant.id == hub.owner.tenant_id).values(status="disabled")
        )
    refresher = components_of(hub.app).get(OAuthContext).refresher
    assert await refresh_pass(hub.db, refresher) == 0
    assert peers.auth.token_requests("refresh_token") == []
    async with owner_session(hub.db) as session:  # enabled again: refreshed on the next pass
        await session.execute(
            update(Tenant).where(Tenant.id == hub.owner.tenant_id).values(status="active")
        )
    assert await refresh_pass(hub.db, refresher) == 1
    assert len(peers.auth.token_requests("refresh_token")) == 1


async def test_two_first_connects_of_one_server_leave_one_credential(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    """Connect pressed twice (or a timed-out CLI connect run again), both completed: the second
    updates the credential the first bound to the server, in place; it made a second one, left
    active and refreshed for ever beside the one bound (an OAuth walk, stop 53)."""
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    _first, first_query = await _consented(hub, peers.peer.url, hub.headers)
    _second, second_query = await _consented(hub, peers.peer.url, hub.headers)
    for query in (first_query, second_query):
        done = await hub.client.get("/oauth/callback", params=query)
        assert done.status_code == 200, done.text
    [credential] = await _credentials(hub)
    assert credential.version == 2
    server = await hub.client.get(hub.owner.url("servers", "linear"), headers=hub.headers)
    assert server.json()["data"]["credential_id"] == str(credential.id)
