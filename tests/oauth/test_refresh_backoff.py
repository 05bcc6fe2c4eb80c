"""A refresh that failed for now holds the next try back for one refresher interval: an
authorization server that is down is not asked again on every use and every pass."""

from __future__ import annotations

import uuid
from datetime import timedelta

from hub.core import clock
from hub.core.components import components_of
from hub.models import Credential
from hub.oauth.context import OAuthContext
from hub.oauth.worker import refresh_pass
from tests.conftest import ClockControl
from tests.oauth.conftest import Hub, OAuthPeers, OAuthPeersStarter
from tests.support.databases import owner_session
from tests.support.stories import audit_events


async def _held_back(hub: Hub, oauth_peers: OAuthPeersStarter) -> tuple[OAuthPeers, str]:
    """A connected credential whose token expired, its authorization server failing for now."""
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    peers.auth.expire_all()
    await hub.due_in(credential_id, -1)
    peers.auth.knobs.refresh_error = "temporarily_unavailable"
    return peers, credential_id


async def test_an_expired_token_is_not_asked_for_again_until_the_interval_ends(
    hub: Hub, oauth_peers: OAuthPeersStarter, clock_control: ClockControl
) -> None:
    peers, credential_id = await _held_back(hub, oauth_peers)
    refresher = components_of(hub.app).get(OAuthContext).refresher
    interval = refresher.config.refresh_interval_s

    first = await hub.snapshot("linear")
    assert first.status_code == 422, first.text
    assert first.json()["error"]["reason"] == "token_refresh_failed"
    assert len(peers.auth.token_requests("refresh_token")) == 1
    # held back: uses fail at once, the worker skips the row, nothing is audited again
    for _ in range(3):
        again = await hub.snapshot("linear")
        assert again.status_code == 422, again.text
        assert again.json()["error"]["reason"] == "token_refresh_failed"
    assert await refresh_pass(hub.db, refresher) == 0
    assert len(peers.auth.token_requests("refresh_token")) == 1
    failed = await audit_events(hub.db, action="credential.refresh", outcome="failed")
    assert [event.details["error"] for event in failed] == ["token_request_failed"]
    assert (await hub.credential(credential_id))["status"] == "active"

    # the interval over and the server back: the next use refreshes, once
    peers.auth.knobs.refresh_error = None
    clock_control.advance(interval + 1)
    await hub.due_in(credential_id, -1)
    snapshot = await hub.snapshot("linear")
    assert snapshot.status_code == 201, snapshot.text
    assert len(peers.auth.token_requests("refresh_token")) == 2


async def test_a_token_still_valid_is_used_while_refreshes_are_held_back(
    hub: Hub, oauth_peers: OAuthPeersStarter, clock_control: ClockControl
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    await hub.due_in(credential_id, 60)  # due for the worker, valid still
    peers.auth.knobs.refresh_error = "temporarily_unavailable"
    refresher = components_of(hub.app).get(OAuthContext).refresher

    assert await refresh_pass(hub.db, refresher) == 1  # asked, and failed
    assert await refresh_pass(hub.db, refresher) == 0  # held back
    snapshot = await hub.snapshot("linear")  # the old token, with no new ask
    assert snapshot.status_code == 201, snapshot.text
    assert len(peers.auth.token_requests("refresh_token")) == 1

    peers.auth.knobs.refresh_error = None
    clock_control.advance(refresher.config.refresh_interval_s + 1)
    await hub.due_in(credential_id, 60)
    assert await refresh_pass(hub.db, refresher) == 1
    assert len(peers.auth.token_requests("refresh_token")) == 2
    async with owner_session(hub.db, write=False) as session:
        row = await session.get(Credential, uuid.UUID(credential_id))
    assert row is not None
    assert row.refresh_lease_until is None
    assert row.expires_at is not None
    assert row.expires_at > clock.now() + timedelta(seconds=60)


async def test_a_reauthorisation_ends_the_hold(
    hub: Hub, oauth_peers: OAuthPeersStarter, clock_control: ClockControl
) -> None:
    peers, credential_id = await _held_back(hub, oauth_peers)
    assert (await hub.snapshot("linear")).status_code == 422
    peers.auth.knobs.refresh_error = None
    done = await hub.connect({"server": "linear"})  # connected again: a fresh token
    assert done.callback is not None, done.created.text
    assert done.callback.status_code == 200, done.callback.text
    assert done.credential_id == credential_id
    snapshot = await hub.snapshot("linear")
    assert snapshot.status_code == 201, snapshot.text
