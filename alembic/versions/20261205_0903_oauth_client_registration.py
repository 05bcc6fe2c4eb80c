"""oauth_client_registration: how an authorization's client was had, so that a pre-registered
client is kept for its tenant and issuer only once it has redeemed a code (issue 14's walk)

A pre-registered client (``"client"`` in the request) used to be kept at the start of the flow,
before the authorization server had accepted it: a mistyped client id then replaced the tenant's
working registration for that issuer, and every later connect and step-up used it and failed.
``client_registration`` (``pre_registered``, ``stored``, ``metadata_document``, ``dynamic``;
NULL on rows from before) tells the callback whether to keep the client it has just proven.

Revision ID: 0903
Revises: 0902
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0903"
down_revision: str | None = "0902"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("oauth_authorizations") as batch_op:
        batch_op.add_column(sa.Column("client_registration", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("oauth_authorizations") as batch_op:
        batch_op.drop_column("client_registration")
