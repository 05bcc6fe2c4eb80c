"""How many connections one process holds at once (``HUB_MAX_CONNECTIONS``).

Found by sending it (stop 45). Nothing bounded the connections a process kept open: uvicorn's
``limit_concurrency`` answers 503 only once a request's head has arrived, so a connection that
sends nothing, or part of a head, is held until its timer ends it (5 s idle, 10 s for a head in
pieces, :mod:`hub.core.http_protocol`). 5,000 such connections to ``hub serve`` took VmRSS from
122 to 160 MB, 7.5 KB a connection: a client opening 10,000 a second holds 100,000, past the
chart's 512 MiB limit. With a lower open-files limit (a shell's 1,024) the process ran out of
file descriptors first: new connections were closed unanswered, and a call already in progress
could not open its upstream connection.

:class:`~hub.core.http_protocol.HubHttpToolsProtocol` answers a connection past the bound with
503 ``server_busy`` (``retry-after: 1``) and closes it at once, before reading anything, so a
refused connection is held for no longer than it takes to say so. :func:`limit_connections`
sets the bound before the process serves. It first raises the process's soft open-files limit
toward its hard one, so that the bound and :data:`FD_RESERVE` descriptors for the process's own
connections (database, upstream servers, files) fit; where they still do not, the bound is
lowered to fit, with a warning, rather than letting accepts fail.
"""

from __future__ import annotations

import logging
import resource
import time

__all__ = ["BOUND", "FD_RESERVE", "MAX_CONNECTIONS", "ConnectionBound", "limit_connections"]

#: the default bound (``HUB_MAX_CONNECTIONS``): about 75 MB of connections held
MAX_CONNECTIONS = 10_000
#: file descriptors kept for what the process opens itself
FD_RESERVE = 256
#: at most one warning about refused connections this often
WARN_EVERY_S = 10.0

logger = logging.getLogger(__name__)


class ConnectionBound:
    """The connections a process may hold, and the refusals not yet reported in a warning."""

    __slots__ = ("limit", "refused", "warned_at")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.refused = 0
        self.warned_at = -WARN_EVERY_S

    def refuse(self) -> None:
        """Count a refusal; warn with the count at most every :data:`WARN_EVERY_S` (a flood of
        connections must not become a flood of log lines)."""
        self.refused += 1
        now = time.monotonic()
        if now - self.warned_at >= WARN_EVERY_S:
            logger.warning(
                "http: connections past the bound refused with 503",
                extra={"refused_connections": self.refused, "max_connections": self.limit},
            )
            self.refused, self.warned_at = 0, now


#: The process's bound (each ``--workers`` process has its own).
BOUND = ConnectionBound(MAX_CONNECTIONS)


def limit_connections(wanted: int) -> int:
    """Set the process's bound to ``wanted``, or to what its open-files limit allows; the bound."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (OSError, ValueError):  # not permitted here: the bound fits the limit instead
            pass
    bound = wanted
    if soft != resource.RLIM_INFINITY and soft < needed:
        bound = max(1, soft - FD_RESERVE)
        logger.warning(
            "HUB_MAX_CONNECTIONS lowered to fit the open-files limit",
            extra={"max_connections": bound, "wanted": wanted, "open_files_limit": soft},
        )
    BOUND.limit = bound
    return bound
