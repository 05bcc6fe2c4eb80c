"""A fetcher that cannot send a packet anywhere: no DNS, no dialling.

Discovery and catalog snapshots reach upstreams only through the app's :class:`~hub.egress.Fetcher`.
The fuzz gives the app one whose resolver never asks DNS (IP literals answer themselves, a few test
names answer from a table, every other name fails like NXDOMAIN) and whose dialer refuses every
address. So every URL the fuzz invents is judged by the hub's own URL rules and
destination policy, and whatever passes them ends in a refused connect, in-process.
"""

from __future__ import annotations

import ipaddress
import socket

from hub.core.settings import Settings
from hub.egress import EgressConfig, Fetcher
from tests.egress.support import PUBLIC_V4, RouteDialer

__all__ = ["NoDnsResolver", "offline_fetcher"]

# Names the seeded objects use; they resolve to a public address that is never dialled.
KNOWN_NAMES = {"canary.example.com": [PUBLIC_V4], "mcp.example.com": [PUBLIC_V4]}


class NoDnsResolver:
    """Answers IP literals with themselves and ``KNOWN_NAMES`` from its table; refuses the rest."""

    async def resolve(self, host: str, port: int) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host.strip("[]")))]
        except ValueError:
            pass
        answers = KNOWN_NAMES.get(host.lower().rstrip("."))
        if answers is None:
            raise socket.gaierror(socket.EAI_NONAME, "fuzz resolver: no DNS here")
        return list(answers)


def offline_fetcher(settings: Settings) -> Fetcher:
    """The app's egress configuration, on a resolver and dialer that never touch the network."""
    dialer = RouteDialer()  # no routes: every dial is refused (before any socket is made)
    return Fetcher(EgressConfig.from_settings(settings), resolver=NoDnsResolver(), dialer=dialer)
