"""What the OAuth flow of one replica needs from the settings (DESIGN §2, §9, §15)."""

from __future__ import annotations

from dataclasses import dataclass

from hub.core.settings import Settings

__all__ = ["CALLBACK_PATH", "CLIENT_METADATA_PATH", "OAuthConfig"]

CALLBACK_PATH = "/oauth/callback"
CLIENT_METADATA_PATH = "/oauth/client-metadata.json"


@dataclass(frozen=True)
class OAuthConfig:
    """``redirect_uri`` is ``HUB_PUBLIC_URL/oauth/callback``; ``client_id_url`` is
    ``HUB_OAUTH_CLIENT_ID_URL`` (default the hub's own client metadata document), used as a
    client id only when it is https (an authorization server fetches it)."""

    public_url: str
    client_id_url: str
    deadline_s: float  # one whole flow step (HUB_DISCOVERY_TIMEOUT_S), every request included
    state_ttl_s: float = 600.0  # state: single use, 10 minutes
    leeway_s: float = 60.0  # refresh when the token expires within this
    refresh_ahead_s: float = 300.0  # the worker refreshes tokens expiring within this
    refresh_interval_s: float = 30.0
    step_up_limit: int = 2  # re-authorisations of one credential per window (3 attempts in all)
    step_up_window_s: float = 600.0
    client_name: str = "MCP Hub"

    @property
    def redirect_uri(self) -> str:
        return f"{self.public_url}{CALLBACK_PATH}"

    @property
    def metadata_document_client_id(self) -> str | None:
        """The CIMD client id, when it can be one (an https URL with a path)."""
        url = self.client_id_url
        return url if url.startswith("https://") and "/" in url[len("https://") :] else None

    @classmethod
    def from_settings(cls, settings: Settings) -> OAuthConfig:
        return cls(
            public_url=settings.public_base_url,
            client_id_url=settings.client_id_metadata_url,
            deadline_s=settings.discovery_timeout_s,
            refresh_ahead_s=settings.oauth_refresh_ahead_s,
            refresh_interval_s=settings.oauth_refresh_interval_s,
        )
