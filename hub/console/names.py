"""Principals on console pages, by name: an approval's agent and decider, an audit row's actor.

A page names the principals it already shows by id, as
:func:`hub.principals.service.principal_label` answers (the tenant's, or the platform admin's,
who acts in every tenant), and the id itself when there is no name to show.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from hub.console.web import TenantConsole
from hub.principals.service import principal_label

__all__ = ["principal_names"]


async def principal_names(page: TenantConsole, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    """id → name (or the id itself) for each distinct principal in ``ids``."""
    names: dict[uuid.UUID, str] = {}
    for principal_id in set(ids):
        label = await principal_label(page.session, page.access.tenant_id, principal_id)
        names[principal_id] = label or str(principal_id)
    return names
