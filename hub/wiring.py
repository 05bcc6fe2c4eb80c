"""What one hub replica holds: its :class:`~hub.core.components.Components`, built once per app.

Nothing here does I/O; the database engine is made in the app's lifespan and the fetcher's pool
opens connections lazily. Domains read their part through a typed dependency
(``Depends(component(X))``); the grant engine reaches the route dependencies of :mod:`hub.authz`
as a :class:`~hub.authz.decider.RouteDecider`, because :mod:`hub.grants` sits above them.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from hub import __version__
from hub.audit.failures import audit_failed_request
from hub.auth.caller import TenantAccess
from hub.authz.decider import Effect, RouteDecider
from hub.core.components import Components
from hub.core.crypto import Keyring
from hub.core.handlers import FailureHooks
from hub.core.metrics import Metrics
from hub.core.settings import ConfigError, Settings
from hub.credentials.readiness import keyring_covers_rows
from hub.credentials.service import CredentialContext
from hub.egress import EgressConfig, Fetcher
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.health.service import Readiness
from hub.mcp import McpClient
from hub.upstream import UpstreamContext

__all__ = ["CLIENT_INFO", "build_components", "egress_config"]

CLIENT_INFO = {"name": "mcp-hub", "version": __version__}


def egress_config(settings: Settings) -> EgressConfig:
    try:
        return EgressConfig.from_settings(settings)
    except ValueError as exc:
        raise ConfigError(f"invalid egress configuration: {exc}") from None


def _route_decider(cache: PolicyCache) -> RouteDecider:
    async def decide(
        session: AsyncSession, access: TenantAccess, resource: str, action: str
    ) -> Effect:
        decision = await grants_service.decide(session, cache, access, resource, action)
        return decision.effect

    return RouteDecider(decide)


def build_components(settings: Settings, fetcher: Fetcher | None = None) -> Components:
    """Everything a replica needs; a malformed keyring or egress setting stops the hub here."""
    keyring = Keyring.from_settings(settings)
    egress = egress_config(settings)
    fetcher = fetcher or Fetcher(egress)
    pepper = settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""
    metrics = Metrics()
    cache = PolicyCache()
    upstream = UpstreamContext(
        client=McpClient(fetcher, client_info=CLIENT_INFO),
        keyring=keyring,
        egress=egress,
        deadline_s=settings.discovery_timeout_s,
        metrics=metrics,
        call_deadline_s=settings.tool_call_timeout_s,
    )
    return Components(
        [
            settings,
            keyring,
            egress,
            fetcher,
            metrics,
            cache,
            _route_decider(cache),
            CredentialContext(keyring, egress, pepper),
            upstream,
            Readiness((keyring_covers_rows(keyring),)),
            FailureHooks((audit_failed_request,)),
        ]
    )
