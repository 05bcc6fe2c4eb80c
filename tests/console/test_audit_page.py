"""The console's audit page: newest first, each actor by name, the actor filter by name or id."""

from __future__ import annotations

import html

import httpx2

from hub.audit.actions import Action
from hub.audit.service import record
from hub.core.db import Database
from hub.core.tenancy import system_scope
from tests.console.conftest import ConsoleWorld
from tests.console.support import ConsoleUser
from tests.support.factories import make_platform_admin, make_principal
from tests.support.stories import change_audit_row


async def test_actors_are_named_and_filtered_by_name_or_id(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    admin = world.setup.admin.principal_id
    page = await user.get(world.page("audit"))
    assert page.status_code == 200, page.text
    assert f'<span title="{admin}">someone</span>' in page.text  # the tenant admin, by name
    numbers = [int(cell) for cell in _seq_cells(page.text)]
    assert len(numbers) >= 2  # the deployment made, the console session opened
    assert numbers == sorted(numbers, reverse=True)  # newest first

    by_name = await user.get(world.page("audit"), params={"actor": "someone"})
    by_id = await user.get(world.page("audit"), params={"actor": str(admin)})
    assert by_name.status_code == by_id.status_code == 200
    assert _seq_cells(by_name.text) == _seq_cells(by_id.text) == _seq_cells(page.text)

    quiet = await user.get(world.page("audit"), params={"actor": "bot"})  # a name, no rows
    assert quiet.status_code == 200
    assert "No events match." in quiet.text

    # a name that names nobody, or several: no events, said on the page, the filters kept
    unknown = await user.get(world.page("audit"), params={"actor": "nobody", "outcome": "success"})
    assert unknown.status_code == 200
    assert "No principal is named 'nobody'." in html.unescape(unknown.text)
    assert "No events match." in unknown.text
    assert 'value="nobody"' in unknown.text
    assert "<option selected>success</option>" in unknown.text
    await make_principal(database, world.tenant_id, role="agent", kind="agent", name="bot")
    twice = await user.get(world.page("audit"), params={"actor": "bot"})
    assert twice.status_code == 200
    assert "Several principals are named 'bot': give the id." in html.unescape(twice.text)


async def test_the_platform_admin_is_found_by_what_the_page_shows(
    user: ConsoleUser, world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> None:
    """The trail shows the platform admin's acts under its name where the tenant's session may
    read it (SQLite), else under its id (PostgreSQL's row-level security keeps platform rows
    from a tenant's scope); filtering by what is shown finds them. By the name, it used to be
    refused: no principal of the tenant is named so."""
    platform = await make_platform_admin(database)
    made = await client.post(
        world.setup.url("principals"),
        json={"kind": "user", "name": "pat"},
        headers={"authorization": f"Bearer {platform.key}"},
    )
    assert made.status_code == 201, made.text
    shown = "platform-admin" if database.is_sqlite else str(platform.principal_id)
    page = await user.get(world.page("audit"), params={"actor": shown})
    assert page.status_code == 200, page.text
    assert f'<span title="{platform.principal_id}">{shown}</span>' in page.text
    assert "<code>principal.create</code>" in page.text
    assert 'id="actor-unmatched"' not in page.text


def _seq_cells(page: str) -> list[str]:
    """The ``#`` column of the page's audit table."""
    body = page.split('<table id="audit">', 1)[1].split("</table>", 1)[0]
    return [row.split("<td>", 2)[1].split("</td>", 1)[0] for row in body.split("<tr>")[2:]]


async def test_the_verify_page_gives_the_anchor_a_later_check_starts_from(
    user: ConsoleUser, world: ConsoleWorld
) -> None:
    page = await user.get(world.page("audit", "verify"))
    assert page.status_code == 200, page.text
    seqs = _seq_cells((await user.get(world.page("audit"))).text)
    anchor = page.text.split('id="anchor"', 1)[1]
    head_seq = max(int(s) for s in seqs)
    assert f"event <code>{head_seq}</code>" in anchor
    assert f"hub audit verify --after {head_seq}:" in anchor


async def test_a_broken_chain_offers_no_anchor(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    await change_audit_row(database, tenant_id=world.tenant_id, seq=1)
    page = await user.get(world.page("audit", "verify"))
    assert page.status_code == 200, page.text
    assert "The chain is broken" in page.text
    assert 'id="anchor"' not in page.text


async def test_a_call_never_reported_stands_out(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    """A direct-mode call whose sidecar never reported (``unreported``: it may have run) is
    marked as a denied or failed one is, not shown plainly as a pending one is."""
    tenant = system_scope(world.tenant_id, reason="test: a sweep's row")
    async with database.session() as session:
        await record(
            session,
            tenant_id=tenant,
            actor_id=world.setup.admin.principal_id,
            action=Action.TOOL_CALL,
            resource="tool:linear.search",
            request_id=None,
            outcome="unreported",
        )
    page = await user.get(world.page("audit"), params={"outcome": "unreported"})
    assert page.status_code == 200, page.text
    assert "<option selected>unreported</option>" in page.text
    assert '<span class="bad">unreported</span>' in page.text
