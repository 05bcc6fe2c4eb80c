"""One operation of the pinned fetcher: a logical exchange under one deadline, pinned to one
origin (the rules are :mod:`hub.egress.fetcher`'s docstring; this module enforces them per request).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import quote_plus

import httpx2

from hub.core.logging import redacting
from hub.egress.config import EgressConfig
from hub.egress.errors import EgressTimeout, InvalidSecret, OriginRefused, RedirectRefused
from hub.egress.limits import ByteBudget, OriginLimiter
from hub.egress.network import lookup_scope
from hub.egress.responses import EgressResponse, StreamedResponse
from hub.egress.urls import is_header_safe_secret, origin_of, validate_url

__all__ = ["Operation"]


class Sender(Protocol):
    """What an operation needs of its :class:`~hub.egress.fetcher.Fetcher` (a protocol, so this
    module does not import the one that makes operations)."""

    config: EgressConfig
    limiter: OriginLimiter
    scoped_limiter: OriginLimiter

    def _build_request(
        self, method: str, url: str, *, json: Any, content: bytes | None, headers: httpx2.Headers
    ) -> httpx2.Request: ...

    async def _send(self, request: httpx2.Request) -> httpx2.Response: ...


# Set by the fetcher itself; a caller setting one is a bug, refused loudly.
_RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "host",
        "accept-encoding",
        "content-length",
        "transfer-encoding",
        "connection",
        "te",
        "upgrade",
        "cookie",
    }
)


def _basic_credentials(basic: tuple[str, str]) -> str:
    """RFC 6749 §2.3.1: ``base64(urlencode(client_id) ":" urlencode(client_secret))``."""
    client_id, secret = basic
    pair = f"{quote_plus(client_id, safe='')}:{quote_plus(secret, safe='')}"
    return base64.b64encode(pair.encode()).decode("ascii")


class Operation:
    """One logical exchange under one deadline, pinned to one origin; an async context manager."""

    def __init__(
        self,
        fetcher: Sender,
        *,
        pin: str,
        deadline_s: float,
        bearer: str | None,
        scope: str | None = None,
        basic: tuple[str, str] | None = None,
    ) -> None:
        if bearer is not None and not is_header_safe_secret(bearer):
            raise InvalidSecret()
        if bearer is not None and basic is not None:
            raise ValueError("an operation sends a bearer or client credentials, not both")
        if not deadline_s > 0:
            raise ValueError("deadline_s must be positive")
        config = fetcher.config
        self._fetcher = fetcher
        self.pin = origin_of(validate_url(pin, config))
        self.allowed_origins = config.allowed_origins(self.pin)
        self.deadline_s = deadline_s
        self.budget = ByteBudget(config.max_operation_bytes)
        self._bearer = bearer
        self._basic = basic
        self._scope = scope
        self._timeout: asyncio.Timeout | None = None
        self._redaction: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        self._active = False
        self._entered = False
        self._slots_held: dict[str, int] = {}
        self._riders: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<Operation pin={self.pin!r}>"

    async def __aenter__(self) -> Operation:
        if self._entered:
            raise RuntimeError("an operation can be entered only once")
        self._entered = True
        if self._bearer is not None:
            self._redaction = redacting(self._bearer)
        elif self._basic is not None:
            self._redaction = redacting(self._basic[1], _basic_credentials(self._basic))
        self._redaction.__enter__()
        try:
            self._timeout = asyncio.timeout(self.deadline_s)
            await self._timeout.__aenter__()
        except BaseException:
            self._redaction.__exit__(None, None, None)
            raise
        self._active = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._active = False
        expired = False
        timeout, self._timeout = self._timeout, None
        try:
            if timeout is not None:
                await timeout.__aexit__(exc_type, exc, tb)
        except TimeoutError:
            expired = True
        finally:
            self._redaction.__exit__(None, None, None)
            self._bearer = None
            self._basic = None
        if expired:
            raise EgressTimeout() from None

    def _build(
        self,
        method: str,
        url: str,
        json: Any,
        content: bytes | None,
        headers: Mapping[str, str] | None,
    ) -> tuple[httpx2.Request, str]:
        if not self._active:
            raise RuntimeError("use the operation inside its async with block")
        normalized = validate_url(url, self._fetcher.config)
        origin = origin_of(normalized)
        if origin not in self.allowed_origins:
            raise OriginRefused()
        merged = httpx2.Headers(headers or {})
        for name, value in merged.items():
            if name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"the {name.lower()} header is set by the fetcher")
            if any(ch in value for ch in "\r\n\x00"):
                raise ValueError(f"the {name.lower()} header value is not valid")
        if self._bearer is not None:
            merged["authorization"] = f"Bearer {self._bearer}"
        elif self._basic is not None:
            merged["authorization"] = f"Basic {_basic_credentials(self._basic)}"
        request = self._fetcher._build_request(
            method, normalized, json=json, content=content, headers=merged
        )
        return request, origin

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        accept_redirect: bool = False,
    ) -> AsyncIterator[StreamedResponse]:
        """Send a request; yield its response with the body unread (closed when the block ends).

        A 3xx is :class:`RedirectRefused` unless ``accept_redirect``: then it is yielded like any
        answer (its ``Location`` is the caller's to read, and is never contacted here)."""
        request, origin = self._build(method, url, json, content, headers)
        async with self._slot(origin):
            self._read_until_deadline(request)
            response = await self._fetcher._send(request)
            streamed = StreamedResponse(
                response, budget=self.budget, max_bytes=self._fetcher.config.max_response_bytes
            )
            try:
                if 300 <= response.status_code < 400 and not accept_redirect:
                    raise RedirectRefused()
                yield streamed
            finally:
                await streamed.aclose()

    def _read_until_deadline(self, request: httpx2.Request) -> None:
        """Each read of ``request`` may wait as long as the deadline leaves (at least
        ``read_timeout_s``): a shorter wait cut calls whose server works in silence (stop 53)."""
        when = self._timeout.when() if self._timeout is not None else None
        if when is not None:
            remaining = when - asyncio.get_running_loop().time()
            timeouts = {**request.extensions.get("timeout", {})}
            timeouts["read"] = max(self._fetcher.config.read_timeout_s, remaining)
            request.extensions["timeout"] = timeouts

    @contextlib.asynccontextmanager
    async def _slot(self, origin: str) -> AsyncIterator[None]:
        """A slot of ``origin``: a new one, or a ride on one this operation holds (see above)."""
        riders = self._riders.get(origin, 0)
        if riders < self._slots_held.get(origin, 0):
            self._riders[origin] = riders + 1
            try:
                yield
            finally:
                self._riders[origin] -= 1
            return
        scoped: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()
        if self._scope is not None:
            scoped = self._fetcher.scoped_limiter.slot(f"{self._scope} {origin}")
        async with scoped, self._fetcher.limiter.slot(origin):
            self._slots_held[origin] = self._slots_held.get(origin, 0) + 1
            try:
                with lookup_scope(self._scope):  # the tenant's share of the DNS threads
                    yield
            finally:
                self._slots_held[origin] -= 1

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        accept_redirect: bool = False,
    ) -> EgressResponse:
        """Send a request and read its whole (capped) body."""
        async with self.stream(
            method,
            url,
            json=json,
            content=content,
            headers=headers,
            accept_redirect=accept_redirect,
        ) as resp:
            body = await resp.read()
            return EgressResponse(status_code=resp.status_code, headers=resp.headers, content=body)
