"""secret_checks: a check value per keyring key id and for the API-key pepper (stop 53)

A restore with a keyring whose key under a known id has other bytes, or with another pepper,
left ``/readyz`` at 200 while every call failed ``credential_unavailable`` or every key was 401
(an upgrade and backup walk, stop 52). A replica now records what its secrets look like (an
AES-GCM tag of nothing under each key, an HMAC of a fixed string under the pepper) the first
time its readiness is asked or ``hub bootstrap`` runs, and is not ready while its secrets do not
match what is recorded. Not a tenant table: the secrets are the platform's, so no row-level
security.

Revision ID: 0909
Revises: 0908
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0909"
down_revision: str | None = "0908"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "secret_checks",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_secret_checks")),
    )


def downgrade() -> None:
    op.drop_table("secret_checks")
