"""``hub approvals`` and ``hub audit`` against a live hub (``hub serve`` in a subprocess).

The commands follow the contracts (DESIGN §4, §10.3, §11, §15): ``GET /tenants/{t}/approvals``,
``GET …/{a}``, ``POST …/{a}/decision``, ``GET /tenants/{t}/audit`` and ``…/audit/verify``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import create_engine, insert, select

from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.models import Approval, Principal
from tests.cli.support import LiveHub, live_hub, tenant_with_owner
from tests.deploy.serving import TEST_KEYRING
from tests.support.hubcommand import hub_argv
from tests.support.stories import append_late_tool_call


def _pending_approval(
    hub: LiveHub, tenant_slug: str, deployment_id: uuid.UUID | None = None
) -> str:
    """A pending approval row written straight into the hub's database (what the gateway would
    write for an ``ask`` call), with its arguments sealed under the hub's keyring."""
    from hub.approvals.service import approval_aad
    from hub.core.settings import Settings
    from hub.models import Tenant

    keyring = Keyring.from_settings(Settings(encryption_keys=SecretStr(TEST_KEYRING)))
    engine = create_engine(f"sqlite:///{hub.workdir / 'hub.db'}")
    approval_id = uuid.uuid4()
    now = datetime.now(UTC)
    with engine.begin() as conn:
        tenant_id = conn.execute(select(Tenant.id).where(Tenant.slug == tenant_slug)).scalar_one()
        agent_id = conn.execute(
            select(Principal.id).where(Principal.tenant_id == tenant_id, Principal.name == "bot")
        ).scalar_one()
        sealed = keyring.encrypt(json.dumps({"id": "42"}), approval_aad(tenant_id, approval_id))
        conn.execute(
            insert(Approval).values(
                id=approval_id,
                tenant_id=tenant_id,
                deployment_id=deployment_id or uuid.uuid4(),
                agent_id=agent_id,
                grant_key="tool:peer.delete_record",
                handle="peer",
                tool_name="delete_record",
                wire_name="peer__delete_record",
                arguments_key_id=sealed.key_id,
                arguments_nonce=sealed.nonce,
                arguments_ciphertext=sealed.ciphertext,
                arguments_sha256="0" * 64,
                tool_sha256="0" * 64,
                catalog_version=1,
                status="pending",
                requested_at=now,
                expires_at=now + timedelta(minutes=15),
            )
        )
    engine.dispose()
    return str(approval_id)


DELETE_RECORD: dict[str, object] = {
    "name": "delete_record",
    "description": "Deletes a record.\u202e",
    "inputSchema": {"type": "object"},
    "annotations": {"destructiveHint": True},
}


@pytest.mark.slow
async def test_approvals_show_names_the_deployment_and_shows_the_pinned_tool(
    tmp_path: Path,
) -> None:
    """What a person needs to decide: the deployment by name, and the tool as the call's
    catalog version holds it, flagged when it declares itself destructive, escaped."""
    from hub.core.db import Database
    from hub.models import Tenant
    from tests.support.factories import make_catalog, make_server

    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        engine = create_engine(f"sqlite:///{hub.workdir / 'hub.db'}")
        with engine.begin() as conn:
            tenant_id = conn.execute(select(Tenant.id).where(Tenant.slug == "acme")).scalar_one()
        engine.dispose()
        db = Database.from_url(f"sqlite+aiosqlite:///{hub.workdir / 'hub.db'}")
        try:
            server_id = await make_server(db, tenant_id, "peer")
            await make_catalog(db, tenant_id, server_id, [DELETE_RECORD])
        finally:
            await db.dispose()
        made = await hub.ok(
            "deployments",
            "create",
            "bot",
            "--server",
            "peer",
            "--name",
            "bot-peer",
            "--json",
            "--profile",
            "owner",
        )
        approval = _pending_approval(hub, "acme", uuid.UUID(made.json()["id"]))
        shown = (await hub.ok("approvals", "show", approval, "--profile", "owner")).stdout
        assert ["DEPLOYMENT", "bot-peer"] in [line.split() for line in shown.splitlines()]
        assert "the tool, as catalog version 1 holds it; it declares itself destructive:" in shown
        assert '"description": "Deletes a record.\\u202e"' in shown  # escaped, not acting
        assert "\u202e" not in shown


@pytest.mark.slow
async def test_approvals_list_on_a_live_hub(tmp_path: Path) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        listed = await hub.ok("approvals", "list", "--profile", "owner")
        assert listed.stdout.split()[:3] == ["ID", "STATUS", "TOOL"]
        assert (await hub.ok("approvals", "list", "--json", "--profile", "owner")).json() == []


@pytest.mark.slow
async def test_approvals_show_approve_and_deny_on_a_live_hub(tmp_path: Path) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        approval = _pending_approval(hub, "acme")
        shown = await hub.ok("approvals", "show", approval, "--profile", "owner")
        assert '"id": "42"' in shown.stdout
        assert ["AGENT", "bot"] in [line.split() for line in shown.stdout.splitlines()]
        pending = await hub.ok("approvals", "list", "--profile", "owner")
        [row] = [line.split() for line in pending.stdout.splitlines() if approval in line]
        assert row[3] == "bot"  # the agent by name, not its id
        decided = await hub.ok(
            "approvals", "approve", approval, "--note", "ok", "--json", "--profile", "owner"
        )
        assert decided.json()["status"] == "approved"
        shown = await hub.ok("approvals", "show", approval, "--profile", "owner")
        assert ["DECIDED", "BY", "owner"] in [line.split() for line in shown.stdout.splitlines()]
        listed = await hub.ok(
            "approvals",
            "list",
            "--status",
            "approved",
            "--agent",
            "bot",
            "--json",
            "--profile",
            "owner",
        )
        assert [a["id"] for a in listed.json()] == [approval]
        again = await hub.cli("approvals", "deny", approval, "--profile", "owner")
        assert again.code == 1
        assert len(again.error_lines) == 1, again.stderr


@pytest.mark.slow
async def test_audit_tail_and_verify_on_a_live_hub(tmp_path: Path) -> None:
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        await hub.ok("principals", "create", "dee", "--role", "deployer", "--profile", "owner")
        tail = await hub.ok("audit", "tail", "--json", "--profile", "owner")
        assert any(row["action"] == "principal.create" for row in tail.json())
        table = await hub.ok("audit", "tail", "--profile", "owner")
        rows = [line.split() for line in table.stdout.splitlines()]
        assert ["owner", "principal.create"] in [row[2:4] for row in rows], rows  # by name
        whole = (await hub.ok("audit", "verify", "--json", "--profile", "owner")).json()
        assert whole["ok"] is True
        await hub.ok("principals", "create", "eve", "--role", "deployer", "--profile", "owner")
        anchor = f"{whole['head_seq']}:{whole['head_hash']}"
        since = await hub.ok("audit", "verify", "--after", anchor, "--json", "--profile", "owner")
        assert (since.json()["ok"], since.json()["checked"]) == (True, 1)
        assert since.json()["head_seq"] == whole["head_seq"] + 1
        forged = await hub.cli(
            "audit", "verify", "--after", f"{whole['head_seq']}:{'0' * 64}", "--profile", "owner"
        )
        assert forged.code == 1  # the chain does not continue from that hash
        garbled = await hub.cli("audit", "verify", "--after", "three", "--profile", "owner")
        assert garbled.code == 2, garbled.stderr
        local = await hub.cli("audit", "verify", "--local", "--after", anchor)
        assert local.code == 2, local.stderr  # from an anchor, --local checks one chain: named

        # filtered by the hub: an action, an actor by name, an outcome, a time
        owner = ("--profile", "owner")
        mine = (await hub.ok("audit", "tail", "--actor", "owner", "--json", *owner)).json()
        assert mine
        assert {row["actor_id"] for row in mine} == {tail.json()[-1]["actor_id"]}
        made = await hub.ok("audit", "tail", "--action", "principal.create", "--json", *owner)
        assert {row["action"] for row in made.json()} == {"principal.create"}
        assert (await hub.ok("audit", "tail", "--outcome", "denied", "--json", *owner)).json() == []
        later = await hub.ok("audit", "tail", "--since", "2999-01-01T00:00:00Z", "--json", *owner)
        assert later.json() == []
        nobody = await hub.cli("audit", "tail", "--actor", "nobody", *owner)
        assert (nobody.code, nobody.error_lines) == (
            1,
            ["hub: no principal named 'nobody' in this tenant"],
        )
        unknown = await hub.cli("audit", "tail", "--action", "no.such", *owner)
        assert unknown.code == 1
        assert len(unknown.error_lines) == 1, unknown.stderr
        # a refused request's line says where and what, not only "the request is invalid"
        vague = await hub.cli("audit", "tail", "--since", "1 hour ago", *owner)
        assert vague.code == 1
        [line] = vague.error_lines
        assert "query.since: Input should be a valid datetime" in line, line
        assert "HTTP 400" in line


@pytest.mark.slow
async def test_audit_tail_reads_the_newest_rows_and_follows(tmp_path: Path) -> None:
    """``tail -n N`` is the newest N rows, oldest of them first, read newest first from the hub
    (one short page, however long the trail); ``--follow`` prints each later row once."""
    owner = ("--profile", "owner")
    with live_hub(tmp_path) as hub:
        await tenant_with_owner(hub)
        for name in ("p1", "p2", "p3", "p4", "p5"):
            await hub.ok("principals", "create", name, *owner)
        everything = (await hub.ok("audit", "tail", "-n", "10000", "--json", *owner)).json()
        assert [row["seq"] for row in everything] == sorted(row["seq"] for row in everything)
        last = (await hub.ok("audit", "tail", "-n", "3", "--json", *owner)).json()
        assert [row["id"] for row in last] == [row["id"] for row in everything[-3:]]

        follow = await asyncio.create_subprocess_exec(
            *hub_argv(
                "audit", "tail", "-n", "1", "--follow", "--interval", "0.5", "--json", *owner
            ),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=hub.env(),
            cwd=hub.workdir,
        )
        assert follow.stdout is not None
        stream = follow.stdout
        buffer = ""
        printed: list[dict[str, Any]] = []

        async def until(count: int) -> None:  # each poll prints one JSON array
            nonlocal buffer
            while len(printed) < count:
                chunk = await asyncio.wait_for(stream.read(65536), 60)
                assert chunk, "the follower ended"
                buffer += chunk.decode()
                while buffer.strip():
                    try:
                        rows, end = json.JSONDecoder().raw_decode(buffer.lstrip())
                    except ValueError:
                        break  # the rest of the array is still coming
                    printed.extend(rows)
                    buffer = buffer.lstrip()[end:]

        try:
            await until(1)
            for name in ("later1", "later2"):
                await hub.ok("principals", "create", name, *owner)
            await until(3)
            # a row committed late with an earlier time (as a tool call's is): printed too
            db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}")
            try:
                earlier = datetime.fromisoformat(everything[-1]["at"]) - timedelta(minutes=5)
                await append_late_tool_call(db, uuid.UUID(everything[-1]["tenant_id"]), earlier)
            finally:
                await db.dispose()
            await until(4)
            await asyncio.sleep(1.5)  # three more polls: nothing is printed twice
        finally:
            follow.terminate()
            rest, _ = await asyncio.wait_for(follow.communicate(), 30)
        buffer = (buffer + rest.decode()).strip()
        while buffer:
            rows, end = json.JSONDecoder().raw_decode(buffer)
            printed.extend(rows)
            buffer = buffer[end:].strip()
    assert printed[0]["id"] == everything[-1]["id"]
    assert [row["action"] for row in printed[1:]] == ["principal.create"] * 2 + ["tool.call"]
    assert printed[3]["request_id"] == "written-late"
    assert printed[3]["at"] < printed[0]["at"]
    assert len({row["id"] for row in printed}) == len(printed) == 4
