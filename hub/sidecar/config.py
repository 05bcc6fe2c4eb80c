"""The sidecar's settings, checked before anything runs (DESIGN §10.5, §15).

``--hub`` must be ``https`` unless its host is a loopback address (the agent's key and the
tools' arguments travel on it); ``--listen`` takes a loopback address only. The agent's key comes
from ``HUB_AGENT_KEY`` (never a flag, so it is in no process listing).
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from hub.core.paths import is_slug
from hub.sidecar.errors import SidecarError

__all__ = ["SidecarConfig", "default_cache_dir", "is_loopback_host", "parse_listen"]

Mode = Literal["relay", "direct"]
MAX_DEPLOYMENT_NAME = 200  # as the deployments API allows


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def default_cache_dir(xdg_cache_home: str | None) -> Path:
    """``$XDG_CACHE_HOME/mcp-hub/sidecar``, else ``~/.cache/mcp-hub/sidecar``."""
    base = Path(xdg_cache_home) if xdg_cache_home else Path.home() / ".cache"
    return base / "mcp-hub" / "sidecar"


def check_hub_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SidecarError(f"--hub {url!r}: not an http(s) URL")
    if parts.scheme != "https" and not is_loopback_host(parts.hostname):
        raise SidecarError(f"--hub {url!r}: must be https unless it is a loopback address")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise SidecarError(f"--hub {url!r}: no credentials, query or fragment in the URL")
    return url.rstrip("/")


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) on a loopback address."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise SidecarError(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise SidecarError(
            f"--listen {value!r}: give a loopback IP address (127.0.0.1 or ::1)"
        ) from None
    if not address.is_loopback:
        raise SidecarError(f"--listen {value!r}: refused, only loopback addresses are served")
    return str(address), int(port)


def _deployment(value: str) -> str:
    """The deployment's id (canonical), or its name as given, resolved once the sidecar runs
    (:mod:`hub.sidecar.names`)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        if value.strip() and len(value) <= MAX_DEPLOYMENT_NAME and value.isprintable():
            return value
        raise SidecarError(f"--deployment {value!r}: not a deployment id or name") from None


def _tenant(value: str) -> str:
    """The tenant as the hub's paths take it: its id, or its slug (slugs never parse as ids)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        if is_slug(value):
            return value
        raise SidecarError(f"--tenant {value!r}: not a tenant id or slug") from None


@dataclass(frozen=True)
class SidecarConfig:
    hub: str
    tenant: str
    deployment: str  # an id once :func:`hub.sidecar.names.resolved` has run
    agent_key: str
    mode: Mode = "relay"
    sync_interval_s: float = 30.0
    max_stale_s: float = 600.0
    cache_dir: Path = Path()
    hub_ca: str | None = None
    call_timeout_s: float = 90.0
    sidecar_key: str | None = None  # direct mode: the deployment's sidecar principal's key

    @classmethod
    def checked(
        cls,
        *,
        hub: str,
        tenant: str,
        deployment: str,
        agent_key: str | None,
        mode: str = "relay",
        sync_interval_s: float = 30.0,
        max_stale_s: float = 600.0,
        cache_dir: Path | None = None,
        hub_ca: str | None = None,
        call_timeout_s: float = 90.0,
        sidecar_key: str | None = None,
    ) -> SidecarConfig:
        if not agent_key:
            raise SidecarError("HUB_AGENT_KEY is not set: the sidecar needs the agent's API key")
        if mode not in ("relay", "direct"):
            raise SidecarError(f"--mode {mode!r}: relay or direct")
        if mode == "direct" and not sidecar_key:
            raise SidecarError(
                "--mode direct needs HUB_SIDECAR_KEY, the key of the deployment's sidecar principal"
            )
        if mode == "direct" and sidecar_key == agent_key:
            raise SidecarError("HUB_SIDECAR_KEY must not be the agent's key")
        if sync_interval_s < 1:
            raise SidecarError("--sync-interval: at least 1 second")
        if not 1 <= call_timeout_s <= 3600:
            raise SidecarError("--call-timeout: between 1 and 3600 seconds")
        if max_stale_s < 0:
            raise SidecarError("--max-stale: not negative")
        return cls(
            hub=check_hub_url(hub),
            tenant=_tenant(tenant),
            deployment=_deployment(deployment),
            agent_key=agent_key,
            mode=mode,  # type: ignore[arg-type]
            sync_interval_s=sync_interval_s,
            max_stale_s=max_stale_s,
            cache_dir=cache_dir or default_cache_dir(None),
            hub_ca=hub_ca,
            call_timeout_s=call_timeout_s,
            sidecar_key=sidecar_key if mode == "direct" else None,
        )

    def __repr__(self) -> str:  # never the key
        return (
            f"SidecarConfig(hub={self.hub!r}, tenant={self.tenant!r}, "
            f"deployment={self.deployment!r}, mode={self.mode!r})"
        )

    @property
    def deployment_path(self) -> str:
        return f"/tenants/{self.tenant}/deployments/{self.deployment}"
