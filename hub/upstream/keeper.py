"""The port through which upstream uses reach the OAuth refresher (:mod:`hub.oauth.refresh`).

:mod:`hub.oauth` sits above this package (its flow uses the upstream MCP client), so the
refresher is plugged in by :mod:`hub.wiring` as ``UpstreamContext.tokens`` rather than imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.models import Credential

__all__ = ["TokenKeeper"]


class TokenKeeper(Protocol):
    """The OAuth side of a credential's use (implemented by :mod:`hub.oauth.refresh`)."""

    async def fresh(self, db: Database, tenant_id: TenantId, credential: Credential) -> Credential:
        """``credential``, or its refreshed row when it expires within the leeway."""
        ...

    async def renew(
        self, db: Database, tenant_id: TenantId, credential: Credential
    ) -> Credential | None:
        """After an upstream 401 with ``credential``: a newer token (refreshed now, or by
        someone else since), or ``None`` when there is none to try."""
        ...

    async def challenged(
        self, db: Database, tenant_id: TenantId, credential: Credential, scopes: Sequence[str]
    ) -> None:
        """Record ``scopes`` (an ``insufficient_scope`` challenge) in the credential's scopes."""
        ...
