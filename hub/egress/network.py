"""The network backend under the connection pool: resolve once, check every answer, dial it.

httpcore2 asks its network backend for a TCP stream to ``(host, port)`` each time the pool opens a
connection, then runs TLS on that stream with ``server_hostname`` = the URL host. This backend
(SECURITY §1.3, "validate-at-connect"):

1. resolves the host **once**, inside the caller's deadline (an IP literal is its own only answer;
   numeric oddities like ``2130706433`` or ``0x7f.1`` reach ``getaddrinfo`` and are judged by its
   *output*, never by the URL string);
2. refuses with :class:`DestinationRefused` when there is no answer, an answer is not an IP, or
   **any** answer fails the :class:`DestinationPolicy` — and, for ``localhost``, when any answer is
   not loopback;
3. dials the **first** answer through the :class:`Dialer` (the checked literal; the name is never
   resolved again, so a rebinding DNS server cannot swap the address after the check). Only when
   that connection is refused is the next checked answer of the same lookup tried (``localhost``
   often answers ``::1`` before ``127.0.0.1``); nothing unchecked is ever dialled;
4. returns the stream wrapped so a failed TLS handshake becomes :class:`TlsFailed`. The URL, the
   ``Host`` header, SNI and certificate hostname verification all keep the hostname.

A pooled connection is reused only for its own origin and was checked when it was opened. Unix
sockets are refused. The resolver and the dialer are injectable so tests can answer with any
address and map approved fake addresses to a loopback listener.

``getaddrinfo`` blocks a thread, and a cancelled lookup (the deadline passed) keeps its thread
until the system resolver gives up, which for a name whose DNS servers never answer takes tens of
seconds. :class:`SystemResolver` therefore runs lookups on its own small pool of
:data:`DNS_THREADS` threads, never on the event loop's default executor: tenant-chosen names
that stall can only delay other outbound lookups (each still bounded by its operation's
deadline), not the database driver's lookups or anything else that shares the default executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import httpcore2

from hub.egress.addresses import DestinationPolicy, IPAddress, parse_address
from hub.egress.errors import ConnectFailed, DestinationRefused, EgressTimeout, TlsFailed

__all__ = [
    "DNS_THREADS",
    "Dialer",
    "PolicyBackend",
    "Resolver",
    "SocketOption",
    "SystemResolver",
    "TcpDialer",
]

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class Resolver(Protocol):
    """Turns a hostname into the addresses it answers with, as strings; OSError on failure."""

    async def resolve(self, host: str, port: int) -> list[str]: ...


class Dialer(Protocol):
    """Opens a TCP stream to an already-checked IP literal."""

    async def dial(
        self,
        address: str,
        port: int,
        *,
        connect_timeout_s: float | None,
        socket_options: Iterable[SocketOption] | None,
    ) -> httpcore2.AsyncNetworkStream: ...


DNS_THREADS = 16
"""Threads of the process-wide pool that runs the egress ``getaddrinfo`` calls."""

_dns_pool: ThreadPoolExecutor | None = None
_dns_pool_lock = threading.Lock()


def _dns_executor() -> ThreadPoolExecutor:
    global _dns_pool
    with _dns_pool_lock:
        if _dns_pool is None:
            _dns_pool = ThreadPoolExecutor(DNS_THREADS, thread_name_prefix="hub-egress-dns")
        return _dns_pool


def _sockaddr_host(sockaddr: tuple[Any, ...]) -> str:
    """The address of a ``getaddrinfo`` sockaddr; an IPv6 scope id is kept as ``%scope``."""
    host = str(sockaddr[0])
    if len(sockaddr) == 4 and sockaddr[3]:
        return f"{host.split('%')[0]}%{sockaddr[3]}"
    return host


class SystemResolver:
    """``getaddrinfo`` on the egress DNS threads (see the module docstring); IP literals answer
    themselves. The host is the URL's ASCII (IDNA-encoded) host, as httpcore2 passes it."""

    async def resolve(self, host: str, port: int) -> list[str]:
        literal = parse_address(host)
        if literal is not None:
            return [str(literal)]
        try:
            encoded = host.encode("ascii")
        except UnicodeEncodeError:
            raise socket.gaierror(socket.EAI_NONAME, "not an ASCII host name") from None
        loop = asyncio.get_running_loop()
        infos = await loop.run_in_executor(
            _dns_executor(), socket.getaddrinfo, encoded, port, 0, socket.SOCK_STREAM
        )
        answers: list[str] = []
        for info in infos:
            if not isinstance(info[4][0], str):  # an IPv6 answer while IPv6 is disabled
                continue
            address = _sockaddr_host(info[4])
            if address not in answers:
                answers.append(address)
        return answers


class TcpDialer:
    """httpcore2's own anyio backend, connecting to the IP literal it is given."""

    def __init__(self) -> None:
        self._backend = httpcore2.AnyIOBackend()

    async def dial(
        self,
        address: str,
        port: int,
        *,
        connect_timeout_s: float | None,
        socket_options: Iterable[SocketOption] | None,
    ) -> httpcore2.AsyncNetworkStream:
        return await self._backend.connect_tcp(
            address, port, timeout=connect_timeout_s, socket_options=socket_options
        )


class _TlsCheckedStream(httpcore2.AsyncNetworkStream):
    """Delegates to the dialled stream; a failed handshake becomes :class:`TlsFailed`."""

    def __init__(self, stream: httpcore2.AsyncNetworkStream) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore2.AsyncNetworkStream:
        try:
            return await self._stream.start_tls(ssl_context, server_hostname, timeout)
        except httpcore2.ConnectTimeout:
            failure: Exception = EgressTimeout()
        except (httpcore2.NetworkError, ssl.SSLError, OSError):
            failure = TlsFailed()
        with contextlib.suppress(Exception):
            await self._stream.aclose()
        raise failure


class PolicyBackend(httpcore2.AsyncNetworkBackend):
    """The pool's network backend: every new connection is resolved, checked and pinned."""

    def __init__(self, policy: DestinationPolicy, resolver: Resolver, dialer: Dialer) -> None:
        self.policy = policy
        self._resolver = resolver
        self._dialer = dialer

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        answers = await self._resolve(host, port, timeout)
        failure: Exception = ConnectFailed()
        for address in self.check(host, answers):
            try:
                stream = await self._dialer.dial(
                    str(address), port, connect_timeout_s=timeout, socket_options=socket_options
                )
            except (httpcore2.ConnectError, OSError):
                continue  # refused: the next checked answer of this same lookup
            return _TlsCheckedStream(stream)
        raise failure

    async def _resolve(self, host: str, port: int, limit_s: float | None) -> list[str]:
        try:
            async with asyncio.timeout(limit_s):
                return list(await self._resolver.resolve(host, port))
        except TimeoutError:
            failure: Exception = EgressTimeout()
        except OSError:  # socket.gaierror included: the name does not resolve
            failure = ConnectFailed("upstream host could not be resolved")
        raise failure

    def check(self, host: str, answers: list[str]) -> list[IPAddress]:
        """The answers, in order, when every one passes the policy; else DestinationRefused."""
        addresses = [parse_address(answer) for answer in answers]
        if not addresses:
            raise DestinationRefused()
        must_be_loopback = host.lower().rstrip(".") == "localhost"
        checked: list[IPAddress] = []
        for address in addresses:
            if address is None or not self.policy.permits(address):
                raise DestinationRefused()
            if must_be_loopback and not self.policy.is_loopback(address):
                raise DestinationRefused()
            checked.append(address)
        return checked

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise DestinationRefused()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
