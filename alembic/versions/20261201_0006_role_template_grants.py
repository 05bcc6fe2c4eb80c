"""role templates gain what their roles need (hardening, DESIGN §8)

Operators get ``tool:*`` : ``call`` allow (so they can grant tools); deployers get
``credential:*`` : ``use`` and ``principal:*`` : ``read`` allow (a server, snapshot or deployment
naming a credential needs its use; a deployment names its agent). Existing principals created
with those roles receive the rows they lack, and their ``grants_version`` moves so every replica
recompiles their policy. A principal that already holds a grant for the same (resource, action),
whatever its effect, keeps it: an operator's deliberate ``deny`` is not overwritten.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ADDED: dict[str, list[tuple[str, str]]] = {
    "operator": [("tool:*", "call")],
    "deployer": [("credential:*", "use"), ("principal:*", "read")],
}

principals = sa.table(
    "principals",
    sa.column("id", sa.Uuid()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("role", sa.String()),
    sa.column("grants_version", sa.Integer()),
)
grants = sa.table(
    "grants",
    sa.column("id", sa.Uuid()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("principal_id", sa.Uuid()),
    sa.column("resource", sa.String()),
    sa.column("action", sa.String()),
    sa.column("effect", sa.String()),
    sa.column("conditions", sa.JSON()),
    sa.column("expires_at", sa.DateTime(timezone=True)),
    sa.column("created_by", sa.Uuid()),
    sa.column("created_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.now(UTC)
    for role, added in ADDED.items():
        rows = bind.execute(
            sa.select(principals.c.id, principals.c.tenant_id).where(principals.c.role == role)
        ).all()
        for principal_id, tenant_id in rows:
            held = {
                (r, a)
                for r, a in bind.execute(
                    sa.select(grants.c.resource, grants.c.action).where(
                        grants.c.principal_id == principal_id
                    )
                ).all()
            }
            missing = [(r, a) for r, a in added if (r, a) not in held]
            if not missing:
                continue
            for resource, action in missing:
                bind.execute(
                    grants.insert().values(
                        id=uuid.uuid4(),
                        tenant_id=tenant_id,
                        principal_id=principal_id,
                        resource=resource,
                        action=action,
                        effect="allow",
                        conditions={},
                        expires_at=None,
                        created_by=None,
                        created_at=now,
                    )
                )
            bind.execute(
                principals.update()
                .where(principals.c.id == principal_id)
                .values(grants_version=principals.c.grants_version + 1)
            )


def downgrade() -> None:
    bind = op.get_bind()
    for role, added in ADDED.items():
        role_members = sa.select(principals.c.id).where(principals.c.role == role)
        for resource, action in added:
            bind.execute(
                grants.delete().where(
                    grants.c.principal_id.in_(role_members),
                    grants.c.resource == resource,
                    grants.c.action == action,
                    grants.c.created_by.is_(None),
                )
            )
        bind.execute(
            principals.update()
            .where(principals.c.role == role)
            .values(grants_version=principals.c.grants_version + 1)
        )
