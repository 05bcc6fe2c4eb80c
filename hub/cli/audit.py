"""``hub audit verify --local``: check the audit hash chains in ``HUB_DATABASE_URL`` (DESIGN §11).

A local operator command, like ``hub crypto rotate``: it reads the database directly (no hub
needs to run, no API key) and checks every chain — each tenant's and the platform's — or the one
named with ``--tenant`` (id or slug) and ``--platform``. One line per chain on stdout (or one JSON
object per chain with ``--json``); exit 0 when every chain checked is intact, 1 when one is broken
(its first bad row is named), 2 on a configuration problem or an unknown tenant. With
``--after SEQ:HASH`` (an earlier check's head, recorded elsewhere) it checks one chain from
there: a restore that rewound the chain, or a chain rewritten since, is broken (a check from the
start cannot tell a rewound chain from one that was never longer). The remote
``hub audit verify`` (:mod:`hub.cli.remote.audit`) asks a running hub instead.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings

if TYPE_CHECKING:
    from hub.audit.chain import Anchor, Verification
    from hub.core.tenancy import TenantId

__all__ = ["verify_local"]


def verify_local(
    tenant: list[str], platform: bool, as_json: bool, start: Anchor | None = None
) -> int:
    """Verify the chains in the database (from ``start``: the one chain named); the exit code:
    0 intact, 1 broken, 2 unknown tenant."""
    from sqlalchemy import select

    from hub.audit.service import verify_chain
    from hub.core.db import Database
    from hub.core.tenancy import system_scope
    from hub.models import Tenant

    settings = runtime_settings()
    require_database(settings.database_url, schema=True)  # one line, never a traceback

    async def run() -> int:
        db = Database.from_url(settings.database_url)
        try:
            async with db.session(write=False) as session:
                tenants = (await session.execute(select(Tenant.id, Tenant.slug))).all()
            chosen: list[tuple[str, TenantId | None]] = []
            if platform or not tenant:
                chosen.append(("platform", None))
            for wanted in tenant:
                match = next((t for t in tenants if wanted in (str(t.id), t.slug)), None)
                if match is None:
                    typer.echo(f"hub audit: no tenant {wanted!r}", err=True)
                    return 2
                chosen.append((match.slug, _scope(match.id)))
            if not tenant and not platform:
                chosen.extend((t.slug, _scope(t.id)) for t in tenants)
            broken = 0
            for label, scope in chosen:
                result = await verify_chain(db, scope, start)
                broken += not result.ok
                _report(label, scope, result, as_json)
            return 1 if broken else 0
        finally:
            await db.dispose()

    def _scope(tenant_id: uuid.UUID) -> TenantId:
        return system_scope(tenant_id, reason="hub audit verify reads every chain")

    return asyncio.run(run())


def _report(label: str, scope: TenantId | None, result: Verification, as_json: bool) -> None:
    tenant_id = None if scope is None else str(scope.value)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "chain": label,
                    "tenant_id": tenant_id,
                    "ok": result.ok,
                    "checked": result.checked,
                    "first_bad_id": str(result.first_bad_id) if result.first_bad_id else None,
                    "reason": result.reason,
                    "head_hash": result.head_hash,
                    "head_seq": result.head_seq,
                }
            )
        )
    elif result.ok:
        head = f"{result.head_seq}:{result.head_hash}"  # what ``--after`` takes
        typer.echo(f"{label}: ok, {result.checked} rows, head {head}")
    else:
        typer.echo(
            f"{label}: BROKEN at row {result.first_bad_id} ({result.reason}) "
            f"after {result.checked} rows checked"
        )
