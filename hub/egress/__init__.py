"""The pinned, non-redirecting, size-capped, deadline-bound outbound HTTP fetcher (DESIGN §6).

Every outbound request of the hub goes through :class:`Fetcher`; nothing else may construct an
HTTP client. Module map (each module's docstring states its rules):

- :mod:`~hub.egress.fetcher` — ``Fetcher``: the client, its pool and slots, and the rules;
- :mod:`~hub.egress.operation` — ``Operation``: deadline, pin, bearer, no redirects;
- :mod:`~hub.egress.responses` — bodies, streams and SSE events with their byte caps;
- :mod:`~hub.egress.transport` — the httpx2 transport owning the connection pool;
- :mod:`~hub.egress.network` — resolve once, check every answer, dial the checked address;
- :mod:`~hub.egress.addresses` — the blocked CIDR table and the destination policy;
- :mod:`~hub.egress.urls` — static URL rules, origins, header-safe secrets;
- :mod:`~hub.egress.limits` — per-origin slots and the per-operation byte budget;
- :mod:`~hub.egress.config` and :mod:`~hub.egress.errors`.
"""

from hub.egress.addresses import DestinationPolicy
from hub.egress.config import EgressConfig
from hub.egress.errors import (
    ConnectFailed,
    ConnectionLost,
    DestinationRefused,
    EgressError,
    EgressTimeout,
    InvalidJson,
    InvalidSecret,
    MalformedResponse,
    OriginRefused,
    RedirectRefused,
    ResponseTooLarge,
    TlsFailed,
    UrlRejected,
)
from hub.egress.fetcher import Fetcher
from hub.egress.network import Dialer, Resolver, SystemResolver, TcpDialer
from hub.egress.operation import Operation
from hub.egress.responses import EgressResponse, ServerSentEvent, StreamedResponse
from hub.egress.urls import is_header_safe_secret, origin_of, validate_url

__all__ = [
    "ConnectFailed",
    "ConnectionLost",
    "DestinationPolicy",
    "DestinationRefused",
    "Dialer",
    "EgressConfig",
    "EgressError",
    "EgressResponse",
    "EgressTimeout",
    "Fetcher",
    "InvalidJson",
    "InvalidSecret",
    "MalformedResponse",
    "Operation",
    "OriginRefused",
    "RedirectRefused",
    "Resolver",
    "ResponseTooLarge",
    "ServerSentEvent",
    "StreamedResponse",
    "SystemResolver",
    "TcpDialer",
    "TlsFailed",
    "UrlRejected",
    "is_header_safe_secret",
    "origin_of",
    "validate_url",
]
