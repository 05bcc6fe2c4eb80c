"""What one hub replica holds in ``app.state``: built once per app, shared by every request.

Nothing here does I/O; the database engine is made in the app's lifespan and the fetcher's pool
opens connections lazily.
"""

from __future__ import annotations

from dataclasses import dataclass

from hub import __version__
from hub.core.crypto import Keyring
from hub.core.metrics import Metrics
from hub.core.settings import ConfigError, Settings
from hub.credentials.service import CredentialContext
from hub.discovery.service import DiscoveryContext
from hub.egress import EgressConfig, Fetcher
from hub.grants.cache import PolicyCache
from hub.mcp import McpClient

__all__ = ["CLIENT_INFO", "Components", "build_components", "egress_config"]

CLIENT_INFO = {"name": "mcp-hub", "version": __version__}


def egress_config(settings: Settings) -> EgressConfig:
    try:
        return EgressConfig.from_settings(settings)
    except ValueError as exc:
        raise ConfigError(f"invalid egress configuration: {exc}") from None


@dataclass(frozen=True)
class Components:
    keyring: Keyring
    egress: EgressConfig
    fetcher: Fetcher
    policy_cache: PolicyCache
    metrics: Metrics
    credential_context: CredentialContext
    discovery_context: DiscoveryContext


def build_components(settings: Settings, fetcher: Fetcher | None = None) -> Components:
    """Everything a replica needs; a malformed keyring or egress setting stops the hub here."""
    keyring = Keyring.from_settings(settings)
    egress = egress_config(settings)
    fetcher = fetcher or Fetcher(egress)
    pepper = settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""
    metrics = Metrics()
    return Components(
        keyring=keyring,
        egress=egress,
        fetcher=fetcher,
        policy_cache=PolicyCache(),
        metrics=metrics,
        credential_context=CredentialContext(keyring, egress, pepper),
        discovery_context=DiscoveryContext(
            client=McpClient(fetcher, client_info=CLIENT_INFO),
            keyring=keyring,
            egress=egress,
            deadline_s=settings.discovery_timeout_s,
            metrics=metrics,
        ),
    )
