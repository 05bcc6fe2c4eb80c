"""Destination policy: which IP addresses the hub may connect to (SECURITY §1.2).

An explicit CIDR table, never ``ipaddress.is_global``/``is_private``: on Python 3.11.7 (before the
CVE-2024-4032 fixes) ``::ffff:127.0.0.1`` is not loopback and the NAT64 and 6to4 forms of the
metadata address are "global". Rules, in order:

1. Never: unspecified/"this network", multicast, broadcast, and any IPv6 form that embeds one of
   those (or loopback) — not even ``HUB_EGRESS_ALLOW_CIDRS`` opens them.
2. Loopback (``127.0.0.0/8``, ``::1``, canonical forms only) only with ``HUB_ALLOW_LOOPBACK``.
3. Inside an operator-listed ``HUB_EGRESS_ALLOW_CIDRS`` network: allowed.
4. Anything in :data:`BLOCKED_NETWORKS`, or an IPv6 address whose embedded IPv4 (mapped,
   translated, compatible, NAT64, 6to4, Teredo) is blocked: refused. The transition prefixes
   are themselves in the table, so the unwrapping is a second, independent check.
5. Everything else (public unicast) is allowed.

Callers apply :meth:`DestinationPolicy.permits` to *every* resolver answer and refuse the host if
any answer fails (mixed answers are an attack, not a fallback).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "BLOCKED_NETWORKS",
    "DestinationPolicy",
    "IPAddress",
    "IPNetwork",
    "embedded_ipv4",
    "is_blocked",
    "parse_address",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*cidrs: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


BLOCKED_NETWORKS: tuple[IPNetwork, ...] = _nets(
    # IPv4
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8",  # private
    "100.64.0.0/10",  # CGNAT (Alibaba metadata 100.100.100.200)
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local (cloud metadata 169.254.169.254, ECS 169.254.170.2)
    "172.16.0.0/12",  # private
    "192.0.0.0/24",  # IETF protocol assignments
    "192.0.2.0/24",  # TEST-NET-1
    "192.88.99.0/24",  # 6to4 relay anycast
    "192.168.0.0/16",  # private
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # TEST-NET-2
    "203.0.113.0/24",  # TEST-NET-3
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, incl. 255.255.255.255
    # IPv6
    "::/128",  # unspecified
    "::1/128",  # loopback
    "::/96",  # IPv4-compatible (deprecated)
    "::ffff:0:0/96",  # IPv4-mapped
    "::ffff:0:0:0/96",  # IPv4-translated (SIIT, RFC 2765)
    "::/8",  # the rest of the IETF-reserved block the forms above live in
    "64:ff9b::/96",  # NAT64 well-known prefix
    "64:ff9b:1::/48",  # NAT64 local-use prefix
    "100::/64",  # discard-only
    "2001::/32",  # Teredo
    "2001::/23",  # IETF protocol assignments (benchmarking, ORCHID…; not globally reachable)
    "2001:db8::/32",  # documentation
    "2002::/16",  # 6to4
    "3fff::/20",  # documentation (RFC 9637)
    "5f00::/16",  # SRv6 SIDs (RFC 9602)
    "fc00::/7",  # unique local (AWS IMDS fd00:ec2::254)
    "fe80::/10",  # link-local
    "fec0::/10",  # site-local (deprecated)
    "ff00::/8",  # multicast
)

_LOOPBACK = _nets("127.0.0.0/8", "::1/128")
_NEVER = _nets("0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4", "::/128", "ff00::/8")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")


def parse_address(text: str) -> IPAddress | None:
    """Parse one resolver answer (brackets and an IPv6 zone allowed); ``None`` when not an IP."""
    candidate = text.strip()
    if candidate.startswith("[") and candidate.endswith("]"):
        candidate = candidate[1:-1]
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 transition form carries: mapped, translated (SIIT), compatible,
    NAT64, 6to4, Teredo."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's (obfuscation undone) address
    value = int(address)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d (compatible); :: and ::1 are themselves
        return ipaddress.IPv4Address(value)
    if address in _NAT64 or address in _SIIT:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def _within(address: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    return any(address.version == net.version and address in net for net in networks)


def is_blocked(address: IPAddress) -> bool:
    """True when the address, or the IPv4 address it embeds, is in :data:`BLOCKED_NETWORKS`."""
    if _within(address, BLOCKED_NETWORKS):
        return True
    inner = embedded_ipv4(address)
    return inner is not None and _within(inner, BLOCKED_NETWORKS)


def _never_allowed(address: IPAddress) -> bool:
    if _within(address, _NEVER):
        return True
    inner = embedded_ipv4(address)
    return inner is not None and _within(inner, (*_NEVER, *_LOOPBACK))


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    """Decides per address; built from ``HUB_ALLOW_LOOPBACK`` and ``HUB_EGRESS_ALLOW_CIDRS``."""

    allow_loopback: bool = False
    allow_cidrs: tuple[IPNetwork, ...] = ()

    def permits(self, address: IPAddress) -> bool:
        if _never_allowed(address):
            return False
        if _within(address, _LOOPBACK):
            return self.allow_loopback
        if _within(address, self.allow_cidrs):
            return True
        return not is_blocked(address)

    @staticmethod
    def is_loopback(address: IPAddress) -> bool:
        """Canonical loopback only (``127.0.0.0/8``, ``::1``); embedded forms do not count."""
        return _within(address, _LOOPBACK)
