"""The fetcher's configuration, built from the hub settings (DESIGN §2, §6).

A frozen value: the destination policy inputs (loopback flag, operator-listed private networks),
the extra origins a pinned origin may also reach (normalised with :func:`origin_of` so lookups
compare like with like), the byte caps, the connection limits and the modest per-phase timeouts
that sit under each operation's total deadline. ``read_timeout_s`` is only a floor: a read of an
operation's request may wait as long as its deadline leaves (:class:`~hub.egress.Operation`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hub.egress.addresses import IPNetwork
from hub.egress.errors import UrlRejected
from hub.egress.urls import origin_of

if TYPE_CHECKING:
    from hub.core.settings import Settings

__all__ = ["EgressConfig"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class EgressConfig:
    """Everything the fetcher needs; see :meth:`from_settings`."""

    allow_loopback: bool = False
    allow_cidrs: Sequence[IPNetwork] = ()
    extra_origins: Mapping[str, Sequence[str]] = field(default_factory=dict)
    max_response_bytes: int = 4 * MIB
    max_operation_bytes: int = 16 * MIB
    max_per_origin: int = 8
    max_per_tenant_origin: int = 4
    tls_ca_file: Path | None = None
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    write_timeout_s: float = 10.0
    pool_timeout_s: float = 5.0
    max_connections: int = 256
    keepalive_expiry_s: float = 30.0
    discovery_timeout_s: float = 30.0
    tool_call_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        networks = tuple(ipaddress.ip_network(net, strict=False) for net in self.allow_cidrs)
        object.__setattr__(self, "allow_cidrs", networks)
        try:
            extra = {
                origin_of(pin): tuple(origin_of(other) for other in others)
                for pin, others in self.extra_origins.items()
            }
        except UrlRejected:
            raise ValueError("HUB_EXTRA_ORIGINS holds an entry that is not an origin") from None
        object.__setattr__(self, "extra_origins", extra)
        for name in (
            "max_response_bytes",
            "max_operation_bytes",
            "max_per_origin",
            "max_per_tenant_origin",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive")

    def allowed_origins(self, pin: str) -> frozenset[str]:
        """The pinned origin plus the extra origins configured for it."""
        return frozenset((pin, *self.extra_origins.get(pin, ())))

    @classmethod
    def from_settings(cls, settings: Settings) -> EgressConfig:
        return cls(
            allow_loopback=settings.allow_loopback,
            allow_cidrs=tuple(
                ipaddress.ip_network(cidr, strict=False) for cidr in settings.egress_allow_cidrs
            ),
            extra_origins=settings.extra_origins,
            max_response_bytes=settings.max_response_bytes,
            max_operation_bytes=settings.max_operation_bytes,
            max_per_origin=settings.egress_max_per_origin,
            max_per_tenant_origin=settings.egress_max_per_tenant_origin,
            tls_ca_file=settings.tls_ca_file,
            discovery_timeout_s=settings.discovery_timeout_s,
            tool_call_timeout_s=settings.tool_call_timeout_s,
        )
