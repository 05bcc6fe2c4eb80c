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
seconds. :class:`SystemResolver` therefore runs lookups on its own pool of :data:`DNS_THREADS`
threads, never on the event loop's default executor, so tenant-chosen names that stall cannot
delay the database driver's lookups or anything else that shares the default executor.

Tenants choose the names, so the pool is shared fairly too (:class:`LookupShares`): a lookup made
for a tenant (the operation's ``scope``) holds one of that tenant's :data:`LOOKUPS_PER_SCOPE`
shares until the lookup itself ends — not merely until its caller gives up, since the thread
stays busy — so one tenant whose own DNS stalls can occupy at most that many threads, and other
tenants' lookups never queue behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import httpcore2

from hub.egress.addresses import DestinationPolicy, IPAddress, parse_address
from hub.egress.errors import ConnectFailed, DestinationRefused, EgressTimeout, TlsFailed
from hub.egress.streams import connect_tcp

__all__ = [
    "DNS_THREADS",
    "LOOKUPS_PER_SCOPE",
    "Dialer",
    "LookupShares",
    "PolicyBackend",
    "Resolver",
    "SocketOption",
    "SystemResolver",
    "TcpDialer",
    "lookup_scope",
]

T = TypeVar("T")

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


DNS_THREADS = 32
"""Threads of the process-wide pool that runs the egress ``getaddrinfo`` calls."""

LOOKUPS_PER_SCOPE = 4
"""Lookups one scope (tenant) may have in flight at once; the rest of its lookups wait their
turn inside their own deadlines."""

_lookup_scope: ContextVar[str | None] = ContextVar("hub_egress_lookup_scope", default=None)


@contextlib.contextmanager
def lookup_scope(scope: str | None) -> Iterator[None]:
    """Name the scope (tenant) that lookups made inside the block are counted against."""
    token = _lookup_scope.set(scope)
    try:
        yield
    finally:
        _lookup_scope.reset(token)


@dataclass
class _Share:
    semaphore: asyncio.Semaphore
    users: int = field(default=0)


class LookupShares:
    """At most ``per_scope`` lookups in flight per scope (unscoped lookups are not counted).

    A share is returned when the lookup ends. A caller that stops waiting (its deadline passed)
    leaves the lookup running, shielded, with its share held: for the system resolver the
    thread is still blocked, and letting the tenant start another lookup would hand it one more.
    """

    def __init__(self, per_scope: int) -> None:
        self.per_scope = per_scope
        self._scopes: dict[str, _Share] = {}

    def in_flight(self, scope: str) -> int:
        """Holders plus waiters for ``scope`` (for tests)."""
        entry = self._scopes.get(scope)
        return 0 if entry is None else entry.users

    def _leave(self, scope: str, entry: _Share) -> None:
        entry.users -= 1
        if entry.users == 0 and self._scopes.get(scope) is entry:
            del self._scopes[scope]

    async def run(self, scope: str | None, lookup: Callable[[], Awaitable[T]]) -> T:
        if scope is None:
            return await lookup()
        entry = self._scopes.get(scope)
        if entry is None:
            entry = self._scopes[scope] = _Share(asyncio.Semaphore(self.per_scope))
        entry.users += 1
        try:
            await entry.semaphore.acquire()
        except BaseException:
            self._leave(scope, entry)
            raise
        task = asyncio.ensure_future(lookup())

        def finished(done: asyncio.Future[T]) -> None:
            entry.semaphore.release()
            self._leave(scope, entry)
            if not done.cancelled():
                done.exception()  # retrieved: an abandoned lookup's failure is not news

        task.add_done_callback(finished)
        return await asyncio.shield(task)


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


GetAddrInfo = Callable[..., list[tuple[Any, ...]]]


class SystemResolver:
    """``getaddrinfo`` on the egress DNS threads (see the module docstring); IP literals answer
    themselves. The host is the URL's ASCII (IDNA-encoded) host, as httpcore2 passes it.

    ``getaddrinfo`` and ``executor`` default to the system's and the process-wide egress pool;
    tests pass a function with injected answers (and a small pool) to exercise the threading."""

    def __init__(
        self,
        getaddrinfo: GetAddrInfo | None = None,
        executor: ThreadPoolExecutor | None = None,
    ) -> None:
        self._getaddrinfo = getaddrinfo or socket.getaddrinfo
        self._executor = executor

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
            self._executor or _dns_executor(),
            self._getaddrinfo,
            encoded,
            port,
            0,
            socket.SOCK_STREAM,
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
    """Connects to the IP literal it is given, on the event loop's own transports
    (:mod:`hub.egress.streams`)."""

    async def dial(
        self,
        address: str,
        port: int,
        *,
        connect_timeout_s: float | None,
        socket_options: Iterable[SocketOption] | None,
    ) -> httpcore2.AsyncNetworkStream:
        return await connect_tcp(
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

    def __init__(
        self,
        policy: DestinationPolicy,
        resolver: Resolver,
        dialer: Dialer,
        shares: LookupShares | None = None,
    ) -> None:
        self.policy = policy
        self._resolver = resolver
        self._dialer = dialer
        self.shares = shares or LookupShares(LOOKUPS_PER_SCOPE)

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
        scope = _lookup_scope.get()
        try:
            async with asyncio.timeout(limit_s):
                answers = await self.shares.run(scope, lambda: self._resolver.resolve(host, port))
                return list(answers)
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
