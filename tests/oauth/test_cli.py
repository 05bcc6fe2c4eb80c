"""``hub oauth connect`` against a live ``hub serve``, as an operator runs it after ``hub login``.

The command acts with the login profile like every remote command (no ``HUB_API_KEY``, no
``--url``): it prints the authorization URL alone on stdout and waits. The test is the browser:
it GETs the URL from the loopback authorization server, which consents at once and redirects to
``HUB_PUBLIC_URL/oauth/callback`` (``http://hub.test``), and hands that query to the live hub.
"""

from __future__ import annotations

import asyncio
import subprocess
import urllib.parse
from pathlib import Path

import httpx2
import pytest

from hub.cli.remote.client import HubClient
from hub.cli.remote.context import Remote
from hub.cli.remote.oauth import _callback_note
from hub.cli.remote.output import Output
from hub.cli.remote.profiles import Profile
from tests.cli.support import CliResult, LiveHub, live_hub, tenant_with_owner
from tests.oauth.conftest import OAuthPeers, OAuthPeersStarter
from tests.support.hubcommand import hub_argv

pytestmark = pytest.mark.slow

OWNER = ("--profile", "owner")
SETTINGS = {"HUB_ALLOW_LOOPBACK": "true", "HUB_PUBLIC_URL": "http://hub.test"}


async def _consent(hub: LiveHub, authorization_url: str) -> None:
    """What the operator's browser does: the authorization server's redirect, to the hub."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
        answer = await browser.get(authorization_url)
        assert answer.status_code == 302, answer.text
        back = urllib.parse.urlsplit(answer.headers["location"])
        assert (back.scheme, back.netloc, back.path) == ("http", "hub.test", "/oauth/callback")
        page = await browser.get(f"{hub.url}{back.path}?{back.query}")
    assert page.headers["content-type"].startswith("text/html"), page.text


async def _connect(
    hub: LiveHub, *args: str, stdin: str = "", consent: bool = True
) -> tuple[CliResult, str]:
    """``hub oauth connect ARGS`` as the owner, consenting to the URL it prints; its result and
    that URL ("" when it printed none)."""
    proc = await asyncio.create_subprocess_exec(
        *hub_argv("oauth", "connect", *args, "--interval", "0.2", *OWNER),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hub.env(),
        cwd=hub.workdir,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(stdin.encode())
    proc.stdin.close()
    url = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
    if url and consent:
        await _consent(hub, url)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return CliResult(proc.returncode, url + out.decode(), err.decode()), url


async def _owner_with_server(hub: LiveHub, peers: OAuthPeers) -> None:
    await tenant_with_owner(hub)
    await hub.ok("servers", "add", "linear", peers.peer.url, *OWNER)


async def test_connect_then_step_up_with_the_login_profile(
    tmp_path: Path, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    with live_hub(tmp_path, **SETTINGS) as hub:
        await _owner_with_server(hub, peers)
        early = await hub.cli("catalogs", "snapshot", "linear", *OWNER)  # before connecting
        assert early.code == 1
        assert (
            early.error_lines[0]
            == "linear wants OAuth: hub oauth connect linear, then snapshot again"
        )
        assert "(discovery_failed: unauthorized, HTTP 422" in early.error_lines[1]
        done, url = await _connect(hub, "linear")
        assert done.code == 0, done
        assert url.startswith(f"{peers.auth.issuer}/authorize?")
        assert done.stdout.strip() == url  # the URL alone on stdout
        assert (
            "after you consent, your browser is sent to http://hub.test/oauth/callback (the hub's "
            f"HUB_PUBLIC_URL), not to {hub.url}; if it cannot reach that address, ask whoever "
            "runs the hub to set HUB_PUBLIC_URL"
        ) in done.error_lines
        [credential] = (await hub.ok("credentials", "list", "--json", *OWNER)).json()
        assert credential["type"] == "oauth_token"
        assert f"connected linear: credential {credential['name']} ({credential['id']})" in (
            done.error_lines
        )
        await hub.ok("catalogs", "snapshot", "linear", *OWNER)  # the token works upstream

        stepped, url = await _connect(
            hub, "--credential", credential["name"], "--scope", "issues:write"
        )
        assert stepped.code == 0, stepped
        assert urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["scope"] == ["issues:write"]
        again = (await hub.ok("credentials", "list", "--json", *OWNER)).json()
        assert [(c["id"], c["version"]) for c in again] == [(credential["id"], 2)]  # in place
        for line in (*done.error_lines, *stepped.error_lines):
            assert "Traceback" not in line
        for token in [*peers.auth.tokens, *peers.auth.refresh_tokens]:
            assert token not in done.stdout + done.stderr + stepped.stdout + stepped.stderr


async def test_a_credential_for_a_url_no_server_uses_yet(
    tmp_path: Path, oauth_peers: OAuthPeersStarter
) -> None:
    """``--url URL --name NAME``: a new OAuth credential bound to no server; a server added
    later with ``--credential NAME`` uses it."""
    peers = await oauth_peers()
    with live_hub(tmp_path, **SETTINGS) as hub:
        await tenant_with_owner(hub)
        done, _ = await _connect(hub, "--url", peers.peer.url, "--name", "tracker")
        assert done.code == 0, done
        [credential] = (await hub.ok("credentials", "list", "--json", *OWNER)).json()
        assert (credential["name"], credential["type"]) == ("tracker", "oauth_token")
        assert f"connected credential tracker ({credential['id']})" in done.error_lines
        hint = f"use it with: hub servers add HANDLE {peers.peer.url} --credential tracker"
        assert hint in done.error_lines
        await hub.ok("servers", "add", "linear", peers.peer.url, "--credential", "tracker", *OWNER)
        await hub.ok("catalogs", "snapshot", "linear", *OWNER)  # the token works upstream
        for token in [*peers.auth.tokens, *peers.auth.refresh_tokens]:
            assert token not in done.stdout + done.stderr


async def test_a_pre_registered_client_with_its_secret_from_stdin(
    tmp_path: Path, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"registration": False, "auth_methods": ["client_secret_post"]})
    peers.auth.add_client("pre-id", "pre-secret-value", "client_secret_post")
    with live_hub(tmp_path, **SETTINGS) as hub:
        await _owner_with_server(hub, peers)
        no_way, _ = await _connect(hub, "linear")  # the server registers no one
        assert no_way.code == 1
        assert "registration_unavailable" in no_way.error_lines[-1]
        done, _ = await _connect(
            hub,
            "linear",
            "--client-id",
            "pre-id",
            "--client-auth-method",
            "client_secret_post",
            "--client-secret-stdin",
            stdin="pre-secret-value\n",
        )
        assert done.code == 0, done
        [token] = peers.auth.token_requests("authorization_code")
        assert (token.form["client_id"], token.form["client_secret"]) == (
            "pre-id",
            "pre-secret-value",
        )
        assert "pre-secret-value" not in done.stdout + done.stderr


async def test_failures_are_one_line_with_their_exit_status(
    tmp_path: Path, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"iss_mode": "wrong"})
    with live_hub(tmp_path, **SETTINGS) as hub:
        await _owner_with_server(hub, peers)
        failed, url = await _connect(hub, "linear")  # the server's iss is not its issuer
        assert url
        assert (failed.code, failed.error_lines[-1]) == (
            1,
            "hub: the authorization failed (iss_mismatch)",
        )
        waited, url = await _connect(hub, "linear", "--timeout", "1", consent=False)
        assert url
        assert waited.code == 2
        assert waited.error_lines[-1].startswith("hub: timed out waiting for the authorization")

        refusals = {
            ("nowhere",): "server not found",
            ("--credential", "nothing"): "no credential named 'nothing' in this tenant",
            ("linear", "--credential", "x"): "name a server HANDLE, --credential, or --url",
            (): "name a server HANDLE, --credential, or --url with --name: one of them",
            ("--url", peers.peer.url): "--url and --name go together",
            ("linear", "--url", peers.peer.url, "--name", "n"): "one of them",
            ("--url", "ftp://x.example/mcp", "--name", "n"): "url must be absolute https",
            ("linear", "--client-secret-stdin"): "go with --client-id",
            (
                "linear",
                "--client-id",
                "c",
                "--client-auth-method",
                "none",
                "--client-secret-stdin",
            ): ("a public client (--client-auth-method none) has no secret"),
        }
        for args, message in refusals.items():
            refused, url = await _connect(hub, *args)
            assert (refused.code, url) == (1, ""), (args, refused)
            [line] = refused.error_lines
            assert message in line, (args, line)

        away = await hub.cli("oauth", "connect", "linear", "--profile", "nobody")
        assert away.code == 1
        assert "hub login" in away.error_lines[-1]


async def test_a_refused_refresh_token_says_how_to_connect_again(
    tmp_path: Path, oauth_peers: OAuthPeersStarter
) -> None:
    """``invalid_grant`` on refresh leaves the credential in ``error``; ``hub credentials`` says
    which command brings it back, and that command does."""
    peers = await oauth_peers(auth={"access_ttl_s": 30})  # inside the 60 s lead: each use refreshes
    with live_hub(tmp_path, **SETTINGS) as hub:
        await _owner_with_server(hub, peers)
        assert (await _connect(hub, "linear"))[0].code == 0
        peers.auth.knobs.refresh_error = "invalid_grant"
        refused = await hub.cli("catalogs", "snapshot", "linear", *OWNER)
        assert refused.code == 1
        shown = await hub.ok("credentials", "show", "linear-oauth", *OWNER)
        assert "error" in shown.stdout.split()
        hint = (
            "linear-oauth: its authorization server refused the refresh token or the hub's "
            "client, so nothing can use it until you connect again: hub oauth connect linear"
        )
        assert shown.error_lines == [hint]
        assert (await hub.ok("credentials", "list", *OWNER)).error_lines == [hint]
        peers.auth.knobs.refresh_error = None
        assert (await _connect(hub, "linear"))[0].code == 0
        [credential] = (await hub.ok("credentials", "list", "--json", *OWNER)).json()
        assert (credential["status"], credential["version"]) == ("active", 2)
        assert (await hub.ok("credentials", "list", *OWNER)).error_lines == []
        await hub.ok("catalogs", "snapshot", "linear", *OWNER)


@pytest.mark.parametrize(
    ("profile_url", "warned"),
    [
        ("https://hub.example.com", False),
        ("https://HUB.example.com/", False),
        ("https://hub.example.com:8443", True),
        ("http://10.0.0.7:8080", True),
    ],
)
def test_a_callback_elsewhere_than_the_profiles_hub_is_named(
    profile_url: str, warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    redirect = urllib.parse.quote("https://hub.example.com/oauth/callback", safe="")
    authorization_url = f"https://as.example.com/authorize?client_id=c&redirect_uri={redirect}"
    client = HubClient(profile_url, "hub_not-a-real-key")  # never used: no request is made
    try:
        r = Remote(client, Profile("p", profile_url), Output(False), None)
        _callback_note(r, authorization_url)
    finally:
        client.close()
    said = capsys.readouterr().err
    assert ("https://hub.example.com/oauth/callback" in said) is warned, said
