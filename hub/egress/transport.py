"""The httpx2 transport: a public ``httpcore2.AsyncConnectionPool`` on the policy backend.

httpx2's own ``AsyncHTTPTransport`` keeps its pool private and has no ``network_backend`` argument,
so the hub owns a small transport instead (SECURITY §1.3 option b): the pool is built here, with the
:class:`~hub.egress.network.PolicyBackend` that resolves, checks and pins every connection, HTTP/1.1
only, no retries and no proxy of any kind (the environment is never read).

Only the ``timeout`` request extension is passed down: ``sni_hostname`` or ``trace`` set by anyone
else cannot change whom TLS verifies or what gets logged.

Every ``httpcore2`` exception — when sending and while the body streams — is translated here into
an :class:`~hub.egress.errors.EgressError` with fixed text, raised outside the handler so no
library exception (which may reference the request and its ``Authorization`` header) rides along
as ``__context__``. Errors the backend raises itself (destination, TLS) are already egress errors
and pass through unchanged.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator

import httpcore2
import httpx2

from hub.egress.errors import (
    ConnectFailed,
    ConnectionLost,
    EgressError,
    EgressTimeout,
    UrlRejected,
)
from hub.egress.network import PolicyBackend

__all__ = ["PinnedTransport", "translate_core_error"]


def translate_core_error(exc: Exception) -> EgressError | None:
    """The egress error for an ``httpcore2`` exception; ``None`` for anything else.

    A connection that was never made is :class:`ConnectFailed`; one that broke once it carried
    the request (a read or write failed, or the server closed it before its answer ended) is
    :class:`ConnectionLost`: the server may have acted on the request."""
    if isinstance(exc, httpcore2.TimeoutException):
        return EgressTimeout()
    if isinstance(exc, httpcore2.UnsupportedProtocol):
        return UrlRejected()
    if isinstance(exc, httpcore2.ConnectError):
        return ConnectFailed()
    if isinstance(exc, httpcore2.NetworkError | httpcore2.RemoteProtocolError):
        return ConnectionLost()
    if isinstance(exc, httpcore2.ProtocolError | httpcore2.ProxyError):
        return ConnectFailed()
    return None


class _TranslatedStream(httpx2.AsyncByteStream):
    """The response body from the pool, with its exceptions translated."""

    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        iterator = self._stream.__aiter__()
        try:
            while True:
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    return
                except Exception as exc:
                    failure = translate_core_error(exc)
                    if failure is None:
                        raise
                else:
                    yield chunk
                    continue
                raise failure
        finally:
            if isinstance(iterator, AsyncGenerator):
                await iterator.aclose()

    async def aclose(self) -> None:
        closer = getattr(self._stream, "aclose", None)
        if closer is not None:
            try:
                await closer()
            except Exception as exc:
                failure = translate_core_error(exc)
                if failure is None:
                    raise
            else:
                return
            raise failure


class PinnedTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 over a connection pool whose every connection goes through ``backend``."""

    def __init__(
        self,
        *,
        backend: PolicyBackend,
        ssl_context: ssl.SSLContext,
        max_connections: int,
        keepalive_expiry: float,
    ) -> None:
        self.backend = backend
        self.pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=backend,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not isinstance(request.stream, httpx2.AsyncByteStream):
            raise TypeError("the egress transport needs an async request body")
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions={"timeout": request.extensions.get("timeout", {})},
        )
        try:
            response = await self.pool.handle_async_request(core_request)
        except Exception as exc:
            failure = translate_core_error(exc)
            if failure is None:
                raise
        else:
            if not isinstance(response.stream, AsyncIterable):
                raise TypeError("the connection pool returned a sync body")
            return httpx2.Response(
                status_code=response.status,
                headers=response.headers,
                stream=_TranslatedStream(response.stream),
                extensions=response.extensions,
            )
        raise failure

    async def aclose(self) -> None:
        await self.pool.aclose()
