"""The refresher refreshes side by side, and one tenant cannot fill its batch (stop 45).

It refreshed one claimed credential after another: a tenant whose authorization server never
answered made each of its refreshes last the flow deadline, and every credential claimed after
them, any tenant's, waited with its lease running out and its token expiring.
"""

from __future__ import annotations

import time

import pytest
from fastapi import FastAPI

from hub.core.components import components_of
from hub.core.db import Database
from hub.core.settings import Settings
from hub.oauth.context import OAuthContext
from hub.oauth.worker import refresh_pass
from tests.conftest import make_settings
from tests.oauth.conftest import Hub, OAuthPeers, OAuthPeersStarter
from tests.support.stories import make_tenant_admin

DEADLINE_S = 2.0  # one whole flow step, here


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(
        db_url, allow_loopback=True, discovery_timeout_s=DEADLINE_S, public_url="http://hub.test"
    )


async def _tenant(
    app: FastAPI, hub: Hub, peers: OAuthPeers, count: int, due_in: float
) -> list[str]:
    other = Hub(app, hub.client, hub.db, await make_tenant_admin(hub.db))
    made = [await other.connected(peers, f"s{number}") for number in range(count)]
    for credential_id in made:
        await other.due_in(credential_id, due_in)
    return made


async def test_a_tenant_whose_authorization_server_never_answers_delays_no_other(
    app: FastAPI, hub: Hub, database: Database, oauth_peers: OAuthPeersStarter
) -> None:
    slow_peers = await oauth_peers(auth={"access_ttl_s": 120})
    prompt_peers = await oauth_peers(auth={"access_ttl_s": 120})
    await _tenant(app, hub, slow_peers, 3, due_in=40)  # the most urgent: claimed first
    await _tenant(app, hub, prompt_peers, 1, due_in=55)
    slow_peers.auth.knobs.token_delay_s = (
        DEADLINE_S + 1
    )  # past the deadline: every refresh times out
    refresher = components_of(app).get(OAuthContext).refresher
    started = time.monotonic()
    assert await refresh_pass(database, refresher) == 4
    elapsed = time.monotonic() - started
    slow = slow_peers.auth.token_requests("refresh_token")
    [prompt] = prompt_peers.auth.token_requests("refresh_token")
    assert len(slow) == 3
    # Side by side: the prompt tenant's refresh was asked before the first slow one's deadline
    # passed (one after another, it waits three deadlines). An order, not a duration, so a
    # loaded machine cannot fail it; the pass's own length is bounded more loosely below.
    assert prompt.at < min(request.at for request in slow) + DEADLINE_S
    assert elapsed < 2 * DEADLINE_S + 1.5  # never two deadlines one after another


async def test_one_tenant_claims_at_most_its_share_of_a_pass(
    app: FastAPI, hub: Hub, database: Database, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"access_ttl_s": 120})
    await _tenant(app, hub, peers, 3, due_in=40)
    refresher = components_of(app).get(OAuthContext).refresher
    assert await refresh_pass(database, refresher, per_tenant=2) == 2
    assert len(peers.auth.token_requests("refresh_token")) == 2
    assert await refresh_pass(database, refresher, per_tenant=2) == 1  # the third, still due
