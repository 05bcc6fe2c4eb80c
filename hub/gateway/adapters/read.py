"""A ``tools/call``'s reads before the upstream call, in one round trip on PostgreSQL.

The caller's key row and the deployment's rows come from ``hub_gateway_read`` (migration 0902):
``hub_auth_key``'s row first (it sets the connection's RLS scope to the key's tenant, noted here
as authentication notes it), then, when the stored hash is the one computed from the presented
key, the deployment's entries of that tenant — the columns of
:func:`~hub.deployments.service.view_rows`. Authentication itself is unchanged
(:func:`hub.auth.deps.admit_request_values`: constant-time compare, revocation, expiry, disabled
principal or tenant, the ``last_used_at`` touch). SQLite has no functions; it reads the two as
before.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import column, text
from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth.service import DEFINER_KEY_COLUMNS
from hub.core import rls
from hub.core.statements import read_scoping_rows
from hub.deployments.service import VIEW_COLUMNS

__all__ = ["CallRead", "read_call"]

_SCOPE = len(DEFINER_KEY_COLUMNS) - 1  # the key part's last column: the scope it set

_READ = text("SELECT * FROM hub_gateway_read(:key_id, :key_hash, :deployment_id)").columns(
    *DEFINER_KEY_COLUMNS,
    *(column(c.name, c.type) for c in VIEW_COLUMNS),
    column("entry_position"),
)


@dataclass(frozen=True)
class CallRead:
    """The key's definer columns (``values``) and the deployment's view rows (none: unknown
    deployment, another tenant's, or a key whose hash did not match)."""

    values: tuple[Any, ...]
    rows: Sequence[Any]


async def read_call(
    session: AsyncSession, key_id: str, key_hash: str, deployment_id: uuid.UUID | None
) -> CallRead:
    """Run ``hub_gateway_read`` as the session's first statement (PostgreSQL only)."""
    rls.expect_scope_from_statement()  # the function sets the scope; the begin sends none
    params = {"key_id": key_id, "key_hash": key_hash, "deployment_id": deployment_id}
    rows = await read_scoping_rows(session, _READ, params, _SCOPE)
    first = tuple(rows[0])  # always one row at least (LEFT JOINs)
    view_rows = [row for row in rows if row.agent_id is not None]
    return CallRead(first[: _SCOPE + 1], view_rows)
