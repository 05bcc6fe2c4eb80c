"""Where an approval is decided: its console page (DESIGN §10.3, §14). The gateway's pending
results carry ``HUB_PUBLIC_URL`` plus this path; the console serves it."""

from __future__ import annotations

import uuid

__all__ = ["console_path"]


def console_path(tenant: str, approval_id: uuid.UUID | str) -> str:
    return f"/console/t/{tenant}/approvals/{approval_id}"
