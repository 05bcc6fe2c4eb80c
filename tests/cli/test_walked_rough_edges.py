"""What a new operator met walking the ``hub`` CLI (stop 49), each against a live ``hub serve``.

The worst: a ``..`` typed as a server handle was sent as a path step, so ``hub servers delete
..`` was a ``DELETE /tenants/<t>`` and disabled the tenant. Then tracebacks where one line was
due, a profile that kept a tenant slug a rename made stale, ``--tenant`` never checked at login,
a key revoked from under its own profile, a secret on a pipe ignored by ``update``, a credential
revoked while servers used it without a word, a ``COLUMNS`` of 0 printing nothing, ``audit
verify --platform`` checking a local file instead of the hub.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import LiveHub, live_hub, tenant_with_owner
from tests.peers.fixtures import SdkPeerStarter

OWNER = ("--profile", "owner")

pytestmark = pytest.mark.slow


def _no_traceback(*outputs: str) -> None:
    for text in outputs:
        assert "Traceback" not in text, text


async def test_dot_segments_are_refused_and_the_tenant_stays(tmp_path: Path) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        for args in (
            ("servers", "delete", ".."),
            ("servers", "show", "."),
            ("approvals", "show", "."),
        ):
            refused = await hub.cli(*args, *OWNER)
            assert refused.code == 1, refused
            assert refused.error_lines[-1].endswith("is not a name or an id"), refused.stderr
            _no_traceback(refused.stdout, refused.stderr)
        shown = (await hub.ok("tenants", "show", "acme", "--json")).json()
        assert shown["status"] == "active"
        nothing = await hub.cli("tenants", "update", "acme")
        assert nothing.code == 1
        assert "nothing to change" in nothing.stderr
        # a second principal of one name: made, and said, since commands then need an id
        first = await hub.ok("principals", "create", "dee", "--role", "deployer", *OWNER)
        assert "another of the tenant's" not in first.stderr
        second = await hub.ok("principals", "create", "dee", "--role", "deployer", *OWNER)
        assert "another of the tenant's principals is named 'dee'" in second.stderr


async def test_the_profile_keeps_its_tenant_through_a_rename_and_login_checks_it(
    tmp_path: Path,
) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        await hub.ok("tenants", "create", "beta")
        owner_key = (await hub.ok("keys", "create", "owner")).stdout.strip()
        foreign = await hub.cli(
            "login", "--url", hub.url, "--profile", "o2", "--tenant", "beta", HUB_API_KEY=owner_key
        )
        assert foreign.code == 1
        assert "acts only in tenant acme" in foreign.stderr
        unknown = await hub.cli(
            "login", "--url", hub.url, "--profile", "p2", "--tenant", "nosuch",
            HUB_API_KEY=hub.platform_key,
        )  # fmt: skip
        assert unknown.code == 1
        assert "tenant 'nosuch': tenant not found" in unknown.stderr
        # the slug changes under the owner's profile: it acts in the same tenant still
        await hub.ok("tenants", "update", "acme", "--slug", "acme2")
        listed = await hub.ok("principals", "list", "--json", *OWNER)
        assert "owner" in {p["name"] for p in listed.json()}
        me = [line.split() for line in (await hub.ok("whoami", *OWNER)).stdout.splitlines()]
        assert any(row[:3] == ["acts", "in", "acme2"] for row in me), me
        # another tenant named by the caller: what was asked, and where it came from
        lost = await hub.cli("principals", "list", "--tenant", "beta", *OWNER)
        assert lost.code == 1
        assert lost.error_lines[-1].startswith("hub: tenant not found"), lost.stderr
        assert "--tenant beta" in lost.stderr


async def test_a_profile_is_not_locked_out_by_its_own_key_unless_asked(tmp_path: Path) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        keys = (await hub.ok("keys", "list", "owner", "--json", *OWNER)).json()
        [own] = [k for k in keys if k.get("revoked_at") is None]
        refused = await hub.cli("keys", "delete", own["prefix"], "--principal", "owner", *OWNER)
        assert refused.code == 1
        assert "the key profile 'owner' signs in with" in refused.stderr
        await hub.ok("whoami", *OWNER)  # still in
        await hub.ok("keys", "delete", own["prefix"], "--principal", "owner", "--own", *OWNER)
        assert (await hub.cli("whoami", *OWNER)).code == 1


async def test_credentials_update_takes_a_piped_secret_and_a_revocation_names_its_servers(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless")
    origin = peer.url.removesuffix("/mcp")
    with live_hub(tmp_path, HUB_ALLOW_LOOPBACK="true") as hub:
        await tenant_with_owner(hub)
        await hub.ok(
            "credentials", "create", "peer-key", "--type", "api_key", "--base-url", origin,
            *OWNER, stdin="a-secret-value-long-enough\n",
        )  # fmt: skip
        unsaid = await hub.cli(
            "credentials",
            "create",
            "gh",
            "--type",
            "api_key",
            *OWNER,
            stdin="a-secret-long-enough\n",
        )
        assert unsaid.code == 1
        assert "[--base-url is api_base_url]" in unsaid.stderr  # the flag the operator types
        updated = await hub.ok(
            "credentials", "update", "peer-key", "--json", *OWNER, stdin="another-secret-value\n"
        )
        assert updated.json()["version"] == 2  # the pipe's secret was sent
        nothing = await hub.cli("credentials", "update", "peer-key", *OWNER, stdin="")
        assert nothing.code == 1
        assert "nothing to change" in nothing.stderr
        await hub.ok("servers", "add", "peer", peer.url, "--credential", "peer-key", *OWNER)
        revoked = await hub.ok("credentials", "delete", "peer-key", *OWNER)
        assert "servers peer used it" in revoked.stderr
        assert "hub servers update peer --credential NAME" in revoked.stderr
        shown = await hub.ok("servers", "show", "peer", *OWNER)
        assert "peer-key (revoked)" in shown.stdout, shown.stdout  # where it is named
        _no_traceback(revoked.stderr, updated.stderr)


async def test_a_narrow_columns_still_prints_the_table(tmp_path: Path) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        for columns in ("0", "5", "junk"):
            listed = await hub.ok("principals", "list", *OWNER, COLUMNS=columns)
            assert "owner" in listed.stdout, (columns, listed.stdout)


async def test_the_platform_chain_is_the_hubs_and_local_checks_say_one_line(
    tmp_path: Path,
) -> None:
    with live_hub(tmp_path) as hub:
        await hub.ok("login", "--url", hub.url, HUB_API_KEY=hub.platform_key)
        tail = await hub.ok("audit", "tail", "--platform", "--json")
        assert "platform_admin.bootstrap" in {row["action"] for row in tail.json()}, tail.stdout
        empty = tmp_path / "elsewhere"
        empty.mkdir()
        # asked of the hub: from a directory with no database at all, it still answers
        verified = await hub.cli("audit", "verify", "--platform", "--json")
        assert verified.code == 0, verified.stderr
        local = LiveHub(hub.server, empty, hub.platform_key)
        for args in (("audit", "verify", "--local"), ("crypto", "rotate")):
            done = await local.cli(*args)
            assert done.code == 1, done
            assert done.error_lines == [
                "hub: the database sqlite+aiosqlite:///.hub/hub.db holds no hub schema yet: run"
                " `hub db upgrade` first (with the same HUB_DATABASE_URL)"
            ], done.stderr
        url = f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}"
        wrong = await hub.cli("db", "upgrade", "9999", HUB_DATABASE_URL=url)
        assert wrong.code == 2
        assert wrong.error_lines == [
            "hub: cannot migrate to '9999': Can't locate revision identified by '9999'"
        ]
        at = await hub.ok("db", "upgrade", "0001", HUB_DATABASE_URL=url)
        assert at.error_lines[-1].endswith("(the newest)"), at.stderr  # never a downgrade
        both = await hub.cli("bootstrap", "--force", "--if-absent", HUB_DATABASE_URL=url)
        assert both.code == 2
        assert "--force and --if-absent ask opposite things" in both.stderr
        port = await hub.cli("serve", "--port", "99999")
        assert port.code == 2
        assert "Invalid value for '--port'" in port.stderr
        _no_traceback(wrong.stderr, both.stderr, port.stderr)
