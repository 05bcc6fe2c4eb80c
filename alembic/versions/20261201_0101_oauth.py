"""oauth: client registrations, authorization flows, OAuth columns and refresh leases

``oauth_clients`` (one registration per tenant and issuer), ``oauth_authorizations`` (one
authorization-code flow, its state stored hashed), and on ``credentials`` the hub-written OAuth
columns plus the refresh lease (``refresh_lease_until``, ``refresh_lease_holder``) and an index
for the refresher's "due soon" scan. Every new column is nullable: existing rows are untouched.

Revision ID: 0101
Revises: 0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0101"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)

CREDENTIAL_COLUMNS = (
    ("oauth_issuer", sa.String(length=2048)),
    ("oauth_token_endpoint", sa.String(length=2048)),
    ("oauth_client_id", sa.String(length=2048)),
    ("oauth_auth_method", sa.String(length=32)),
    ("oauth_resource", sa.String(length=2048)),
    ("oauth_scopes", sa.String(length=4096)),
    ("oauth_server_url", sa.String(length=2048)),
    ("refresh_lease_until", TS),
    ("refresh_lease_holder", sa.String(length=64)),
)


def _sealed(field: str) -> list[sa.Column[object]]:
    return [
        sa.Column(f"{field}_key_id", sa.String(length=32), nullable=True),
        sa.Column(f"{field}_nonce", sa.LargeBinary(), nullable=True),
        sa.Column(f"{field}_ciphertext", sa.LargeBinary(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("credentials") as batch:
        for name, kind in CREDENTIAL_COLUMNS:
            batch.add_column(sa.Column(name, kind, nullable=True))
    op.create_index("ix_credentials_refresh_due", "credentials", ["type", "status", "expires_at"])

    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=2048), nullable=False),
        sa.Column("auth_method", sa.String(length=32), nullable=False),
        sa.Column("registration", sa.String(length=16), nullable=False),
        sa.Column("redirect_uri", sa.String(length=2048), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        *_sealed("client_secret"),
        sa.CheckConstraint(
            "registration IN ('dynamic', 'pre_registered')",
            name=op.f("ck_oauth_clients_registration"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_oauth_clients_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_clients")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_oauth_clients_tenant_id_id")),
        sa.UniqueConstraint("tenant_id", "issuer", name=op.f("uq_oauth_clients_tenant_id_issuer")),
    )

    op.create_table(
        "oauth_authorizations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("completed_at", TS, nullable=True),
        sa.Column("initiator_id", sa.Uuid(), nullable=False),
        sa.Column("server_id", sa.Uuid(), nullable=True),
        sa.Column("credential_id", sa.Uuid(), nullable=True),
        sa.Column("credential_name", sa.String(length=200), nullable=True),
        sa.Column("step_up", sa.Boolean(), nullable=False),
        sa.Column("server_url", sa.String(length=2048), nullable=False),
        sa.Column("resource", sa.String(length=2048), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("iss_required", sa.Boolean(), nullable=False),
        sa.Column("token_endpoint", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=2048), nullable=False),
        sa.Column("auth_method", sa.String(length=32), nullable=False),
        sa.Column("scopes", sa.String(length=4096), nullable=True),
        sa.Column("redirect_uri", sa.String(length=2048), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        *_sealed("verifier"),
        *_sealed("client_secret"),
        sa.CheckConstraint(
            "status IN ('pending', 'redeeming', 'completed', 'failed')",
            name=op.f("ck_oauth_authorizations_status"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_oauth_authorizations_tenant_id_tenants")
        ),
        sa.ForeignKeyConstraint(
            ["initiator_id"],
            ["principals.id"],
            name=op.f("fk_oauth_authorizations_initiator_id_principals"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "server_id"],
            ["servers.tenant_id", "servers.id"],
            name=op.f("fk_oauth_authorizations_tenant_id_servers"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "credential_id"],
            ["credentials.tenant_id", "credentials.id"],
            name=op.f("fk_oauth_authorizations_tenant_id_credentials"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_authorizations")),
        sa.UniqueConstraint("state_hash", name=op.f("uq_oauth_authorizations_state_hash")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_oauth_authorizations_tenant_id_id")),
    )
    op.create_index(
        "ix_oauth_authorizations_credential",
        "oauth_authorizations",
        ["tenant_id", "credential_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_oauth_authorizations_credential", table_name="oauth_authorizations")
    op.drop_table("oauth_authorizations")
    op.drop_table("oauth_clients")
    op.drop_index("ix_credentials_refresh_due", table_name="credentials")
    with op.batch_alter_table("credentials") as batch:
        for name, _kind in reversed(CREDENTIAL_COLUMNS):
            batch.drop_column(name)
