"""Every refusal of the flow happens before any token request (SECURITY checklist 34-37):
the authorization server's ``/token`` is counted and must see nothing."""

from __future__ import annotations

import httpx2
import pytest

from hub.core.components import components_of
from hub.egress import Fetcher
from tests.conftest import ClockControl
from tests.oauth.conftest import Hub, OAuthPeersStarter
from tests.oauth.support import redirect_query


async def _started(hub: Hub, peers_url: str) -> dict[str, str]:
    await hub.add_server("linear", peers_url)
    started = await hub.start({"server": "linear"})
    assert started.status_code == 201, started.text
    data: dict[str, str] = started.json()["data"]
    return data


async def _consent(hub: Hub, url: str) -> dict[str, str]:
    return await redirect_query(components_of(hub.app).get(Fetcher), url)


def _reason_of_page(response: httpx2.Response) -> str:
    text = response.text
    return text.split("<dt>Reason code</dt><dd>", 1)[1].split("</dd>", 1)[0]


async def test_replayed_state_is_refused_and_redeems_nothing(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    data = await _started(hub, peers.peer.url)
    query = await _consent(hub, data["authorization_url"])
    first = await hub.client.get("/oauth/callback", params=query)
    assert first.status_code == 200, first.text
    replay = await hub.client.get("/oauth/callback", params=query)
    assert replay.status_code == 400
    assert _reason_of_page(replay) == "state_invalid"
    assert len(peers.auth.token_requests()) == 1


async def test_forged_state_is_refused_before_any_token_request(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    data = await _started(hub, peers.peer.url)
    query = await _consent(hub, data["authorization_url"])
    forged = await hub.client.get("/oauth/callback", params={**query, "state": "forged-" * 5})
    assert forged.status_code == 400
    assert _reason_of_page(forged) == "state_invalid"
    missing = await hub.client.get("/oauth/callback", params={"code": query["code"]})
    assert missing.status_code == 400
    assert peers.auth.token_requests() == []


@pytest.mark.parametrize("mode", ["wrong", "omit", "slash"])
async def test_wrong_or_missing_iss_is_refused_before_any_token_request(
    hub: Hub, oauth_peers: OAuthPeersStarter, mode: str
) -> None:
    peers = await oauth_peers(auth={"iss_mode": mode, "iss_supported": True})
    data = await _started(hub, peers.peer.url)
    query = await _consent(hub, data["authorization_url"])
    refused = await hub.client.get("/oauth/callback", params=query)
    assert refused.status_code == 400
    assert _reason_of_page(refused) == "iss_mismatch"
    assert peers.auth.token_requests() == []
    status = await hub.client.get(
        hub.owner.url("oauth", "authorizations", data["id"]), headers=hub.headers
    )
    assert status.json()["data"]["status"] == "failed"
    assert status.json()["data"]["reason"] == "iss_mismatch"


async def test_absent_iss_is_accepted_when_the_server_never_sends_it(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"iss_mode": "omit", "iss_supported": False})
    await hub.connected(peers)
    assert len(peers.auth.token_requests()) == 1


async def test_metadata_issuer_mismatch_stops_before_registration(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"metadata_issuer": "https://evil.example.com"})
    await hub.add_server("linear", peers.peer.url)
    refused = await hub.start({"server": "linear"})
    assert refused.status_code == 422
    assert refused.json()["error"]["reason"] == "issuer_mismatch"
    assert peers.auth.requests("/register") == []
    assert peers.auth.token_requests() == []


@pytest.mark.parametrize("issuer", ["{issuer}/", "{issuer_upper}"])
async def test_an_issuer_that_differs_only_in_form_is_a_mismatch(
    hub: Hub, oauth_peers: OAuthPeersStarter, issuer: str
) -> None:
    peers = await oauth_peers()
    peers.auth.knobs.metadata_issuer = issuer.format(
        issuer=peers.auth.issuer, issuer_upper=peers.auth.issuer.replace("http", "HTTP")
    )
    await hub.add_server("linear", peers.peer.url)
    refused = await hub.start({"server": "linear"})
    assert refused.json()["error"]["reason"] == "issuer_mismatch"


async def test_prm_resource_mismatch_stops_before_the_authorization_server(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(guard={"prm_resource": "https://other.example.com/mcp"})
    await hub.add_server("linear", peers.peer.url)
    refused = await hub.start({"server": "linear"})
    assert refused.status_code == 422
    assert refused.json()["error"]["reason"] == "resource_mismatch"
    assert peers.auth.log == []  # not even its metadata was fetched


@pytest.mark.parametrize("methods", [None, ["plain"]])
async def test_no_s256_means_no_flow(
    hub: Hub, oauth_peers: OAuthPeersStarter, methods: list[str] | None
) -> None:
    peers = await oauth_peers(auth={"code_challenge_methods": methods})
    await hub.add_server("linear", peers.peer.url)
    refused = await hub.start({"server": "linear"})
    assert refused.status_code == 422
    assert refused.json()["error"]["reason"] == "pkce_unsupported"
    assert peers.auth.requests("/register") == []
    assert peers.auth.token_requests() == []


async def test_expired_state_is_refused(
    hub: Hub, oauth_peers: OAuthPeersStarter, clock_control: ClockControl
) -> None:
    peers = await oauth_peers()
    data = await _started(hub, peers.peer.url)
    query = await _consent(hub, data["authorization_url"])
    clock_control.advance(601)
    refused = await hub.client.get("/oauth/callback", params=query)
    assert refused.status_code == 400
    assert peers.auth.token_requests() == []
    status = await hub.client.get(
        hub.owner.url("oauth", "authorizations", data["id"]), headers=hub.headers
    )
    assert status.json()["data"] == status.json()["data"] | {
        "status": "failed",
        "reason": "state_expired",
    }


async def test_an_authorization_error_shows_only_fixed_text(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    data = await _started(hub, peers.peer.url)
    query = await _consent(hub, data["authorization_url"])
    denied = await hub.client.get(
        "/oauth/callback",
        params={
            "state": query["state"],
            "iss": query["iss"],
            "error": "access_denied",
            "error_description": "<script>alert('upstream words')</script>",
        },
    )
    assert denied.status_code == 400
    assert "upstream words" not in denied.text
    assert "access_denied" not in denied.text
    assert _reason_of_page(denied) == "authorization_denied"
    assert denied.headers["content-security-policy"] == "default-src 'none'"
    assert peers.auth.token_requests() == []


async def test_a_failed_token_request_marks_the_flow_failed(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    data = await _started(hub, peers.peer.url)
    query = await _consent(hub, data["authorization_url"])
    failed = await hub.client.get("/oauth/callback", params={**query, "code": "not-a-code"})
    assert failed.status_code == 422
    assert _reason_of_page(failed) == "token_request_failed"
    status = await hub.client.get(
        hub.owner.url("oauth", "authorizations", data["id"]), headers=hub.headers
    )
    assert status.json()["data"]["reason"] == "token_request_failed"


@pytest.mark.parametrize("suffix", ["\x00", "\n", " x", "é"])
async def test_a_registered_client_id_the_hub_cannot_keep_is_a_failed_registration(
    hub: Hub, oauth_peers: OAuthPeersStarter, suffix: str
) -> None:
    """A registration answer is the authorization server's JSON: a client id holding U+0000
    answered 500 on PostgreSQL (stop 42). A dynamic client id is held to the pre-registered
    rule (visible ASCII): the flow fails as ``registration_failed``, on both backends."""
    peers = await oauth_peers(auth={"client_id_suffix": suffix})
    await hub.add_server("linear", peers.peer.url)
    refused = await hub.start({"server": "linear"})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["reason"] == "registration_failed"
    assert len(peers.auth.requests("/register")) == 1
    assert peers.auth.token_requests() == []
    again = await oauth_peers()  # nothing was kept: a good server still registers the hub
    await hub.add_server("github", again.peer.url)
    assert (await hub.start({"server": "github"})).status_code == 201
