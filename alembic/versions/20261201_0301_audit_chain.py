"""audit hash chain: seq, prev_hash and hash on audit_events, audit_chain_heads; existing rows chained

Each tenant's rows (and the platform's, tenant_id NULL) are chained in (at, id) order with the
rule of hub/audit/chain.py, copied here so this migration keeps meaning what it meant when it was
written. On PostgreSQL the append-only trigger is disabled for the backfill only (migrations run
as the owner) and enabled again in the same transaction.

Revision ID: 0301
Revises: 0202
Create Date: 2026-12-01
"""

import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0301"
down_revision: str | None = "0202"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GENESIS = "0" * 64

events = sa.table(
    "audit_events",
    sa.column("id", sa.Uuid()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("at", sa.DateTime(timezone=True)),
    sa.column("actor_id", sa.Uuid()),
    sa.column("action", sa.String()),
    sa.column("resource", sa.String()),
    sa.column("outcome", sa.String()),
    sa.column("request_id", sa.String()),
    sa.column("details", sa.JSON()),
    sa.column("seq", sa.BigInteger()),
    sa.column("prev_hash", sa.String()),
    sa.column("hash", sa.String()),
)
heads = sa.table(
    "audit_chain_heads",
    sa.column("chain", sa.String()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("seq", sa.BigInteger()),
    sa.column("last_id", sa.Uuid()),
    sa.column("last_hash", sa.String()),
)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _text(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def _hash(prev_hash: str, row: Any, seq: int) -> str:
    details = row.details
    if isinstance(details, str):  # a driver that hands JSON back as text
        details = json.loads(details)
    body = {
        "id": str(row.id),
        "tenant_id": _text(row.tenant_id),
        "seq": seq,
        "at": _utc(row.at).isoformat(timespec="microseconds"),
        "actor_id": _text(row.actor_id),
        "action": row.action,
        "resource": row.resource,
        "outcome": row.outcome,
        "request_id": row.request_id,
        "details": details,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(prev_hash.encode("ascii") + canonical.encode()).hexdigest()


def _chain_existing_rows(bind: sa.Connection) -> None:
    rows = bind.execute(
        sa.select(events).order_by(events.c.tenant_id, events.c.at, events.c.id)
    ).all()
    chains: dict[uuid.UUID | None, tuple[int, str, uuid.UUID | None]] = {}
    for row in rows:
        seq, prev, _ = chains.get(row.tenant_id, (0, GENESIS, None))
        seq += 1
        digest = _hash(prev, row, seq)
        bind.execute(
            events.update()
            .where(events.c.id == row.id)
            .values(seq=seq, prev_hash=prev, hash=digest)
        )
        chains[row.tenant_id] = (seq, digest, row.id)
    for tenant_id, (seq, digest, last_id) in chains.items():
        bind.execute(
            heads.insert().values(
                chain="platform" if tenant_id is None else f"tenant:{tenant_id}",
                tenant_id=tenant_id,
                seq=seq,
                last_id=last_id,
                last_hash=digest,
            )
        )


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    op.create_table(
        "audit_chain_heads",
        sa.Column("chain", sa.String(length=48), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("last_id", sa.Uuid(), nullable=True),
        sa.Column("last_hash", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_audit_chain_heads_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("chain", name=op.f("pk_audit_chain_heads")),
    )
    with op.batch_alter_table("audit_events") as batch_op:
        batch_op.add_column(sa.Column("seq", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("prev_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("hash", sa.String(length=64), nullable=True))
    if postgres:
        op.execute("ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only")
    _chain_existing_rows(bind)
    if postgres:
        op.execute("ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only")
    with op.batch_alter_table("audit_events") as batch_op:
        batch_op.alter_column("seq", existing_type=sa.BigInteger(), nullable=False)
        batch_op.alter_column("prev_hash", existing_type=sa.String(length=64), nullable=False)
        batch_op.alter_column("hash", existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint(
            op.f("uq_audit_events_tenant_id_seq"), ["tenant_id", "seq"]
        )


def downgrade() -> None:
    with op.batch_alter_table("audit_events") as batch_op:
        batch_op.drop_constraint(op.f("uq_audit_events_tenant_id_seq"), type_="unique")
        batch_op.drop_column("hash")
        batch_op.drop_column("prev_hash")
        batch_op.drop_column("seq")
    op.drop_table("audit_chain_heads")
