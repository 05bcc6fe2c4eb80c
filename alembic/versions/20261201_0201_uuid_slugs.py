"""tenant slugs that parse as a UUID are renamed (DESIGN §14)

A tenant path's ``{t}`` takes a slug or an id, so no slug may parse as a UUID (in any spelling
``uuid.UUID`` accepts: hyphens anywhere, any case). Such a slug can only be 32 hex digits with
hyphens, so it becomes ``t-<those 32 digits>`` (``-2``, ``-3``… if that is taken), which starts
with a letter that is not a hex digit and so can never parse. The tenant's id, and every path
naming it by id, are unchanged; each rename is logged (a warning) so an operator can tell the tenant's
users. Downgrade keeps the new slugs (they are valid before this revision too).

Revision ID: 0201
Revises: 0101
Create Date: 2026-12-01
"""

import logging
import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0201"
down_revision: str | None = "0101"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("hub.migrations")
tenants = sa.table("tenants", sa.column("id", sa.Uuid()), sa.column("slug", sa.String()))


def _parses_as_uuid(slug: str) -> bool:
    try:
        uuid.UUID(slug)
    except ValueError:
        return False
    return True


def upgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.select(tenants.c.id, tenants.c.slug)).all()
    taken = {slug for _, slug in rows}
    for tenant_id, slug in rows:
        if not _parses_as_uuid(slug):
            continue
        base = "t-" + slug.replace("-", "")
        new, n = base, 1
        while new in taken:
            n += 1
            new = f"{base}-{n}"
        taken.add(new)
        bind.execute(tenants.update().where(tenants.c.id == tenant_id).values(slug=new))
        log.warning("tenant %s: slug %r looked like a UUID, renamed to %r", tenant_id, slug, new)


def downgrade() -> None:
    pass  # the new slugs are valid slugs before this revision too
