"""An audit writer process for the tests: ``python -m tests.audit.writer_process URL TENANT N
[writer]``.

Appends ``N`` events to tenant ``TENANT``'s chain and ``N`` to the platform's, each in its own
short transaction through the real service (:func:`hub.audit.service.record`), as concurrent
requests on another replica would; with ``writer``, through the replica's
:class:`~hub.audit.writer.AuditWriter` instead (tool calls: on PostgreSQL one statement per event,
moving the head only from the one it last saw), each event awaited before the next.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

from hub.audit.actions import Action
from hub.audit.service import entry_of, record
from hub.audit.writer import AuditWriter, Pending
from hub.core.db import Database
from hub.core.tenancy import system_scope


async def main(url: str, tenant: uuid.UUID, count: int, mode: str) -> None:
    db = Database.from_url(url, pool_size=4)
    scope = system_scope(tenant, reason="test writer process")
    writer = AuditWriter()
    try:
        for i in range(count):
            for target in (scope, None):
                if mode == "writer":
                    pending = Pending()
                    entry = entry_of(
                        tenant_id=target,
                        actor_id=None,
                        action=Action.TOOL_CALL,
                        resource=f"tool:writer-{os.getpid()}-{i}",
                        request_id=None,
                        outcome="success",
                        details={"pid": os.getpid(), "i": i},
                    )
                    writer.submit(db, entry, pending)
                    await pending.wait()
                    continue
                async with db.session() as session:
                    await record(
                        session,
                        tenant_id=target,
                        actor_id=None,
                        action=Action.SERVER_UPDATE,
                        resource=f"server:writer-{os.getpid()}-{i}",
                        request_id=None,
                        details={"pid": os.getpid(), "i": i, "ratio": i / 7, "big": 1e16},
                    )
    finally:
        await db.dispose()


if __name__ == "__main__":
    mode = sys.argv[4] if len(sys.argv) > 4 else "record"
    asyncio.run(main(sys.argv[1], uuid.UUID(sys.argv[2]), int(sys.argv[3]), mode))
