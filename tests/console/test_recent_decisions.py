"""The approvals page's recent decisions: the newest approvals no longer pending, newest first,
from one query however long the tenant's history (DESIGN §14)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import insert, select, update

from hub.core.db import Database
from hub.models import Approval
from tests.console.conftest import ConsoleWorld
from tests.console.support import ConsoleUser, seed_approval
from tests.support.databases import owner_session

HISTORY = 1_200  # more than any page or scan of the list


async def test_recent_decisions_are_the_newest_whatever_the_history(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    newest = await seed_approval(
        database,
        world.tenant_id,
        world.agent.principal_id,
        world.deployment_id,
        arguments={"n": 0},
        tool="newest_tool",
    )
    pending = await seed_approval(
        database,
        world.tenant_id,
        world.agent.principal_id,
        world.deployment_id,
        arguments={"n": 1},
        tool="waiting_tool",
    )
    async with owner_session(database) as session:
        template = (
            await session.execute(select(Approval).where(Approval.id == newest))
        ).scalar_one()
        columns = {c.key: getattr(template, c.key) for c in Approval.__table__.columns}
        older = [
            {
                **columns,
                "id": uuid.uuid4(),
                "tool_name": "old_tool",
                "wire_name": "peer__old_tool",
                "grant_key": "tool:peer.old_tool",
                "status": "denied",
                "requested_at": template.requested_at - timedelta(minutes=n + 1),
            }
            for n in range(HISTORY)
        ]
        await session.execute(insert(Approval), older)
        await session.execute(
            update(Approval)
            .where(Approval.id == newest)
            .values(status="denied", decided_by=world.setup.admin.principal_id)
        )
    page = await user.get(world.page("approvals"))
    assert page.status_code == 200, page.text
    queue, recent = page.text.split("Recent decisions", 1)
    assert "peer.waiting_tool" in queue
    assert "peer.waiting_tool" not in recent
    assert str(pending) not in recent
    assert "peer.newest_tool" in recent  # the newest decision, however many came before
    assert recent.index("peer.newest_tool") < recent.index("peer.old_tool")  # newest first
    assert recent.count("peer.old_tool") == 2 * (50 - 1)  # RECENT rows; code and link text
    newest_row = recent.split("peer.newest_tool", 1)[1].split("</tr>", 1)[0]
    assert "<td>someone</td>" in newest_row  # who decided, by name


async def test_the_queue_tells_calls_apart_by_a_preview_of_their_arguments(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    """Two pending calls of one tool differed only in time; each row now shows the start of its
    arguments, escaped as the approval's page escapes them and cut at 80 characters."""
    long = {"note": "user\u202etxt.exe", "path": "/srv/" + "x" * 200}
    for arguments in ({"path": "/srv/a"}, long):
        await seed_approval(
            database,
            world.tenant_id,
            world.agent.principal_id,
            world.deployment_id,
            arguments=arguments,
            tool="read_file",
        )
    queue = (await user.get(world.page("approvals"))).text.split("Recent decisions", 1)[0]
    assert '<code class="preview">{&#34;path&#34;:&#34;/srv/a&#34;}</code>' in queue
    start = '<code class="preview">{&#34;note&#34;:&#34;user\\u202etxt.exe&#34;,&#34;path'
    cut = queue.split(start, 1)[1].split("</code>")[0]
    assert cut.endswith("xxx…")
    assert "\u202e" not in queue
