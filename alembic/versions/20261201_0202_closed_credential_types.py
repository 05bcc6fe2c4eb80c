"""credential types are a closed set: other types become ``secret`` (DESIGN §14)

Before this revision any ``^[a-z][a-z0-9_]{0,31}$`` was accepted as a credential type, and every
type but ``api_key`` and ``oauth_token`` was stored but never sent (discovery read it as absent).
``secret`` is now the name of exactly that behaviour, so such rows become ``secret``: nothing
that was never sent starts being sent (an ``apikey`` typo is not silently promoted to
``api_key`` — that would start sending its secret). The type a row had is kept in
``metadata.legacy_type`` so an operator can see what was meant, and the row's ``version`` moves
(a client holding the old version gets 409 instead of writing over the change). No CHECK
constraint: during a rolling upgrade an older replica may still write another type, and such a
row reads (and behaves) like a ``secret``. Downgrade restores the recorded types.

Revision ID: 0202
Revises: 0201
Create Date: 2026-12-01
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0202"
down_revision: str | None = "0201"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CLOSED = ("api_key", "oauth_token", "secret")
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

credentials = sa.table(
    "credentials",
    sa.column("id", sa.Uuid()),
    sa.column("type", sa.String()),
    sa.column("metadata", JSON),
    sa.column("version", sa.Integer()),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


def _rewrite(rows: Sequence[Any], values: Any) -> None:
    bind = op.get_bind()
    for row in rows:
        bind.execute(credentials.update().where(credentials.c.id == row.id).values(**values(row)))


def upgrade() -> None:
    now = datetime.now(UTC)
    rows = (
        op.get_bind()
        .execute(
            sa.select(
                credentials.c.id, credentials.c.type, credentials.c.metadata, credentials.c.version
            ).where(credentials.c.type.not_in(CLOSED))
        )
        .all()
    )
    _rewrite(
        rows,
        lambda row: {
            "type": "secret",
            "metadata": {**(row.metadata or {}), "legacy_type": row.type},
            "version": row.version + 1,
            "updated_at": now,
        },
    )


def downgrade() -> None:
    rows = [
        row
        for row in op.get_bind()
        .execute(
            sa.select(credentials.c.id, credentials.c.metadata, credentials.c.version).where(
                credentials.c.type == "secret"
            )
        )
        .all()
        if isinstance((row.metadata or {}).get("legacy_type"), str)
    ]
    _rewrite(
        rows,
        lambda row: {
            "type": row.metadata["legacy_type"],
            "metadata": {k: v for k, v in row.metadata.items() if k != "legacy_type"},
            "version": row.version + 1,
        },
    )
