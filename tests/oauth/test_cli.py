"""``hub oauth connect``: the authorization URL printed, the status polled to its end."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from hub.cli import app as cli_app
from hub.cli.oauth import ConnectFailed, connect
from tests.oauth.conftest import Hub, OAuthPeersStarter
from tests.oauth.support import authorize_headlessly


async def test_connect_prints_the_url_and_waits_for_the_callback(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    hub.client.headers.update(hub.headers)
    announced: list[str] = []
    consents: list[asyncio.Task[object]] = []

    def announce(url: str) -> None:  # the operator opens it in a browser
        announced.append(url)
        consents.append(asyncio.create_task(authorize_headlessly(hub.app, hub.client, url)))

    status = await connect(
        hub.client,
        str(hub.owner.tenant_id),
        {"server": "linear"},
        announce=announce,
        timeout_s=10,
        interval_s=0.05,
    )
    assert status["status"] == "completed"
    assert status["credential_id"]
    assert announced[0].startswith(peers.auth.issuer)


async def test_a_failed_authorization_exits_1_with_its_reason(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"iss_mode": "wrong"})
    await hub.add_server("linear", peers.peer.url)
    hub.client.headers.update(hub.headers)
    consents: list[asyncio.Task[object]] = []

    def announce(url: str) -> None:
        consents.append(asyncio.create_task(authorize_headlessly(hub.app, hub.client, url)))

    with pytest.raises(ConnectFailed) as failed:
        await connect(
            hub.client,
            str(hub.owner.tenant_id),
            {"server": "linear"},
            announce=announce,
            timeout_s=10,
            interval_s=0.05,
        )
    assert failed.value.exit_code == 1
    assert "iss_mismatch" in str(failed.value)


async def test_a_refusal_prints_the_hubs_message_and_request_id(hub: Hub) -> None:
    hub.client.headers.update(hub.headers)
    with pytest.raises(ConnectFailed) as refused:
        await connect(hub.client, str(hub.owner.tenant_id), {"server": "nowhere"}, announce=print)
    assert "server not found" in str(refused.value)
    assert "[request " in str(refused.value)


def test_the_key_comes_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUB_API_KEY", raising=False)
    result = CliRunner().invoke(cli_app, ["oauth", "connect", "linear", "--tenant", "acme"])
    assert result.exit_code == 2
    assert "HUB_API_KEY" in result.output
