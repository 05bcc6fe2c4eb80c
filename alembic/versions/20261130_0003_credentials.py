"""credentials: encrypted secrets with key ids, optimistic version

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _sealed(field: str) -> list[sa.Column[object]]:
    return [
        sa.Column(f"{field}_key_id", sa.String(length=32), nullable=True),
        sa.Column(f"{field}_nonce", sa.LargeBinary(), nullable=True),
        sa.Column(f"{field}_ciphertext", sa.LargeBinary(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "credentials",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("api_base_url", sa.String(length=2048), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("metadata", JSON, nullable=False),
        sa.Column("version", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        *_sealed("secret"),
        *_sealed("refresh_token"),
        *_sealed("client_secret"),
        sa.CheckConstraint(
            "status IN ('active', 'error', 'revoked')", name=op.f("ck_credentials_status")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_credentials_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credentials")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_credentials_tenant_id_id")),
    )
    op.create_index(
        "ix_credentials_tenant_created", "credentials", ["tenant_id", "created_at", "id"]
    )
    op.create_index("ix_credentials_secret_key_id", "credentials", ["secret_key_id"])


def downgrade() -> None:
    op.drop_index("ix_credentials_secret_key_id", table_name="credentials")
    op.drop_index("ix_credentials_tenant_created", table_name="credentials")
    op.drop_table("credentials")
