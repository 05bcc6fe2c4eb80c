"""The pinned fetcher: the only way the hub talks to the outside world (DESIGN §6).

One :class:`Fetcher` per application (made in the lifespan, closed at shutdown) owns the connection
pool, the TLS context (system store plus ``HUB_TLS_CA_FILE``) and the per-origin slots. Work is done
in an :class:`Operation`, one per logical exchange (a discovery, a tool call, a token refresh)::

    async with fetcher.operation(pin="https://mcp.example.com", deadline_s=30, bearer=secret) as op:
        response = await op.request("POST", "https://mcp.example.com/mcp", json=message)

Rules an operation enforces, and why:

- **One total deadline** (``asyncio.timeout``) around the whole block — DNS, connects, every
  request, every body and the caller's own parsing — because per-phase timeouts never stop a
  server that drips one byte at a time. Expiry leaves the block as :class:`EgressTimeout`. A
  read may wait as long as the deadline leaves: a server working in silence is not cut sooner.
- **Pinned origin**: a request may only go to ``pin`` or the extra origins configured for it
  (``HUB_EXTRA_ORIGINS``); anything else is :class:`OriginRefused` before any connection, so a
  credential is never sent to a host it was not registered for.
- **The bearer** is checked as a header value on creation (:class:`InvalidSecret` before any I/O),
  registered for log redaction while the block runs, and sent only as ``Authorization: Bearer``.
  Callers cannot set ``Authorization`` (or framing headers) themselves. An OAuth token request
  authenticates its client instead (``basic=(client_id, client_secret)``, RFC 6749 §2.3.1: each
  part form-urlencoded, then ``Authorization: Basic``); the secret is redacted the same way.
- **No redirects, no proxies, no cookies, no retries**: ``follow_redirects=False`` and any 3xx is
  :class:`RedirectRefused` without contacting ``Location``; ``trust_env=False`` so environment
  proxies are ignored; a cookie jar that accepts nothing, so no state leaks between operations.
  A caller that must *read* a redirect (a headless OAuth client reading the authorization
  server's ``Location``) asks for it with ``accept_redirect=True``: the 3xx is handed back, and
  still nothing follows it.
- **Byte caps** per body, per SSE event and per operation (see :mod:`hub.egress.responses`).
- **Per-origin slots** (:class:`~hub.egress.limits.OriginLimiter`): a request holds one of its
  origin's slots until its response is closed. A request the operation makes *while reading* a
  response of the same origin (a legacy MCP client answering a server→client request that arrived
  on a response stream, which the server awaits before it answers) rides on the slot the
  operation already holds instead of waiting for another: otherwise every operation holding a
  slot would wait for a second one, and at the limit none could ever finish (hold-and-wait). At
  most one such rider per slot held, so an origin sees at most twice its slot count.
- **Per-tenant share** (``HUB_EGRESS_MAX_PER_TENANT_ORIGIN``): an operation with a ``scope`` (the
  tenant it works for) first takes one of that tenant's slots for the origin, so one tenant's slow
  calls cannot hold every slot of an origin that other tenants use too (SECURITY §1.7); its name
  lookups count against the tenant's share of the DNS threads
  (:class:`~hub.egress.network.LookupShares`).
"""

from __future__ import annotations

import functools
import ssl
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import httpx2

from hub.core.logging import install_log_redaction
from hub.egress.addresses import DestinationPolicy
from hub.egress.config import EgressConfig
from hub.egress.limits import OriginLimiter
from hub.egress.network import Dialer, PolicyBackend, Resolver, SystemResolver, TcpDialer
from hub.egress.operation import Operation
from hub.egress.responses import translate_httpx_error
from hub.egress.transport import PinnedTransport

__all__ = ["Fetcher", "build_ssl_context"]

USER_AGENT = "mcp-hub"


def build_ssl_context(ca_file: Path | None) -> ssl.SSLContext:
    """The system trust store, plus ``ca_file`` when set; hostname checks on, TLS 1.2 minimum."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if ca_file is not None:
        context.load_verify_locations(cafile=str(ca_file))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


@functools.lru_cache(maxsize=1024)
def _parsed(url: str) -> httpx2.URL:
    """httpx2's parse of a URL :func:`validate_url` already normalised (immutable, so shared):
    a tool call sends to the same few URLs, and parsing one costs more than sending it."""
    return httpx2.URL(url)


def _refuse_all_cookies() -> CookieJar:
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class Fetcher:
    """The application's one outbound HTTP client; see the module docstring for the rules."""

    def __init__(
        self,
        config: EgressConfig,
        *,
        resolver: Resolver | None = None,
        dialer: Dialer | None = None,
    ) -> None:
        install_log_redaction()
        self.config = config
        self.backend = PolicyBackend(
            DestinationPolicy(config.allow_loopback, tuple(config.allow_cidrs)),
            resolver if resolver is not None else SystemResolver(),
            dialer if dialer is not None else TcpDialer(),
        )
        self.transport = PinnedTransport(
            backend=self.backend,
            ssl_context=build_ssl_context(config.tls_ca_file),
            max_connections=config.max_connections,
            keepalive_expiry=config.keepalive_expiry_s,
        )
        self._client = httpx2.AsyncClient(
            transport=self.transport,
            follow_redirects=False,
            trust_env=False,
            cookies=_refuse_all_cookies(),
            headers={"user-agent": USER_AGENT, "accept-encoding": "identity"},
            timeout=httpx2.Timeout(
                connect=config.connect_timeout_s,
                read=config.read_timeout_s,
                write=config.write_timeout_s,
                pool=config.pool_timeout_s,
            ),
        )
        self._closed = False
        self.limiter = OriginLimiter(config.max_per_origin)
        self.scoped_limiter = OriginLimiter(config.max_per_tenant_origin)

    def __repr__(self) -> str:
        return "<Fetcher>"

    def operation(
        self,
        *,
        pin: str,
        deadline_s: float,
        bearer: str | None = None,
        scope: str | None = None,
        basic: tuple[str, str] | None = None,
    ) -> Operation:
        """A new operation pinned to ``pin``; use it as ``async with``. ``scope`` (a tenant id)
        also bounds the operation by the per-tenant share of each origin's slots; ``basic``
        (client id, client secret) authenticates an OAuth client instead of a bearer."""
        return Operation(
            self, pin=pin, deadline_s=deadline_s, bearer=bearer, scope=scope, basic=basic
        )

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        """Send one built request, headers read, body not yet (for :class:`Operation` only).

        Straight to the transport: what ``AsyncClient.send`` adds around it is authentication,
        redirects, cookies and a log line, and the fetcher wants none of them (no auth flow, no
        redirect followed, a cookie jar that keeps nothing): ``python -m bench upstream``, the
        hub's MCP client, 2.40 → 2.33 M instructions per call. The request is still built by
        the client (its default headers, the timeouts as an extension)."""
        if self._closed:
            raise RuntimeError("the fetcher is closed")
        try:
            response = await self.transport.handle_async_request(request)
        except httpx2.HTTPError as exc:
            failure = translate_httpx_error(exc)
        else:
            response.request = request
            return response
        raise failure

    def _build_request(
        self, method: str, url: str, *, json: Any, content: bytes | None, headers: httpx2.Headers
    ) -> httpx2.Request:
        return self._client.build_request(
            method, _parsed(url), json=json, content=content, headers=headers
        )

    async def aclose(self) -> None:
        self._closed = True
        await self._client.aclose()

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
